#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "model/load_error.h"

namespace tf::model {

namespace {

using nlohmann::json;

// A header over 100 MB is not a checkpoint header but a corrupt length field
// (the safetensors format itself caps it there).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

DType parse_dtype(const std::string& text) {
    if (text == "BF16") return DType::bf16;
    if (text == "F16") return DType::f16;
    if (text == "F32") return DType::f32;
    return DType::other;
}

uint64_t read_u64_le(const std::byte* p) {
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<uint64_t>(p[i]);
    return value;
}

}  // namespace

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::bf16: return "BF16";
        case DType::f16: return "F16";
        case DType::f32: return "F32";
        case DType::other: break;
    }
    return "other";
}

size_t dtype_bytes(DType dtype) {
    switch (dtype) {
        case DType::bf16:
        case DType::f16: return 2;
        case DType::f32: return 4;
        case DType::other: break;
    }
    return 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw LoadError(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        throw LoadError(path + ": cannot stat: " + std::strerror(err));
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
        void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            throw LoadError(path + ": cannot mmap: " + std::strerror(err));
        }
        data_ = static_cast<const std::byte*>(mapped);
    }
    ::close(fd);
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

Checkpoint Checkpoint::open(const std::string& dir) {
    namespace fs = std::filesystem;
    fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
    fs::path single_path = fs::path(dir) / "model.safetensors";
    Checkpoint checkpoint;
    if (!fs::exists(index_path)) {
        if (!fs::exists(single_path)) {
            throw LoadError(dir + ": holds neither model.safetensors nor model.safetensors.index.json");
        }
        return open_file(single_path.string());
    }

    checkpoint.where_ = index_path.string();
    std::ifstream in(index_path, std::ios::binary);
    if (!in) throw LoadError(index_path.string() + ": cannot open");
    std::ostringstream text;
    text << in.rdbuf();
    json index;
    try {
        index = json::parse(text.str());
    } catch (const json::exception& e) {
        throw LoadError(index_path.string() + ": not valid JSON: " + e.what());
    }
    if (!index.is_object() || !index.contains("weight_map") || !index.at("weight_map").is_object()) {
        throw LoadError(index_path.string() + ": has no \"weight_map\" object");
    }
    std::map<std::string, std::vector<std::string>> names_by_shard;
    for (const auto& [name, shard] : index.at("weight_map").items()) {
        if (!shard.is_string()) throw LoadError(index_path.string() + ": weight_map entry " + name + " is not a file name");
        std::string shard_name = shard.get<std::string>();
        if (shard_name.find('/') != std::string::npos || shard_name == "..") {
            throw LoadError(index_path.string() + ": weight_map entry " + name + " names shard \"" + shard_name +
                            "\" outside the directory");
        }
        names_by_shard[shard_name].push_back(name);
    }
    for (const auto& [shard, names] : names_by_shard) {
        fs::path shard_path = fs::path(dir) / shard;
        if (!fs::exists(shard_path)) {
            throw LoadError(index_path.string() + ": shard " + shard + " (holding tensor " + names.front() +
                            ") does not exist");
        }
        checkpoint.add_file(shard_path.string(), &names);
    }
    return checkpoint;
}

Checkpoint Checkpoint::open_file(const std::string& path) {
    Checkpoint checkpoint;
    checkpoint.where_ = path;
    checkpoint.add_file(path, nullptr);
    return checkpoint;
}

Checkpoint Checkpoint::adopt(std::string where, std::map<std::string, TensorView> tensors,
                             std::shared_ptr<const void> owner) {
    Checkpoint checkpoint;
    checkpoint.where_ = std::move(where);
    checkpoint.tensors_ = std::move(tensors);
    checkpoint.owner_ = std::move(owner);
    return checkpoint;
}

void Checkpoint::add_file(const std::string& path, const std::vector<std::string>* only_names) {
    auto file = std::make_shared<MappedFile>(path);
    if (file->size() < 8) {
        throw LoadError(path + ": truncated: " + std::to_string(file->size()) +
                        " bytes, shorter than the 8-byte header length");
    }
    const uint64_t header_bytes = read_u64_le(file->data());
    if (header_bytes > file->size() - 8 || header_bytes > kMaxHeaderBytes) {
        throw LoadError(path + ": header length " + std::to_string(header_bytes) + " runs past the end of the file (" +
                        std::to_string(file->size()) + " bytes): truncated or not a safetensors file");
    }
    const char* header_text = reinterpret_cast<const char*>(file->data() + 8);
    json header;
    try {
        header = json::parse(header_text, header_text + header_bytes);
    } catch (const json::exception& e) {
        throw LoadError(path + ": header is not valid JSON: " + e.what());
    }
    if (!header.is_object()) throw LoadError(path + ": header is not a JSON object");

    const std::byte* data_start = file->data() + 8 + header_bytes;
    const uint64_t data_bytes = file->size() - 8 - header_bytes;
    std::set<std::string> wanted;
    if (only_names) wanted.insert(only_names->begin(), only_names->end());

    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        const std::string what = path + ": tensor " + name;
        if (!entry.is_object() || !entry.contains("dtype") || !entry.at("dtype").is_string() ||
            !entry.contains("shape") || !entry.at("shape").is_array() || !entry.contains("data_offsets") ||
            !entry.at("data_offsets").is_array() || entry.at("data_offsets").size() != 2) {
            throw LoadError(what + ": header entry needs dtype, shape and data_offsets [begin, end]");
        }
        TensorView view;
        view.name = name;
        view.file = path;
        view.dtype_text = entry.at("dtype").get<std::string>();
        view.dtype = parse_dtype(view.dtype_text);
        uint64_t elements = 1;
        for (const json& dim : entry.at("shape")) {
            if (!dim.is_number_unsigned()) throw LoadError(what + ": shape " + entry.at("shape").dump() + " is not a list of sizes");
            const uint64_t d = dim.get<uint64_t>();
            if (d != 0 && elements > (uint64_t{1} << 48) / d) throw LoadError(what + ": shape is too large");
            elements *= d;
            view.shape.push_back(static_cast<int64_t>(d));
        }
        const json& offsets = entry.at("data_offsets");
        if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
            throw LoadError(what + ": data_offsets " + offsets.dump() + " are not byte offsets");
        }
        const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
        if (begin > end || end > data_bytes) {
            throw LoadError(what + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                            "] lie outside the file's " + std::to_string(data_bytes) +
                            " data bytes (truncated file?)");
        }
        const size_t element_bytes = dtype_bytes(view.dtype);
        if (element_bytes != 0 && end - begin != elements * element_bytes) {
            throw LoadError(what + ": holds " + std::to_string(end - begin) + " bytes but shape " +
                            shape_text(view.shape) + " of " + view.dtype_text + " needs " +
                            std::to_string(elements * element_bytes));
        }
        view.data = data_start + begin;
        view.bytes = end - begin;
        if (only_names && !wanted.count(name)) continue;  // the index assigns it elsewhere
        if (tensors_.count(name)) throw LoadError(what + ": also in " + tensors_.at(name).file);
        tensors_.emplace(name, std::move(view));
    }
    if (only_names) {
        for (const std::string& name : *only_names) {
            if (!tensors_.count(name)) {
                throw LoadError(path + ": tensor " + name + " is named by " + where_ + " but missing from the shard");
            }
        }
    }
    files_.push_back(std::move(file));
}

const TensorView* Checkpoint::find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& Checkpoint::require(const std::string& name, const std::vector<int64_t>& shape) const {
    const TensorView* view = find(name);
    if (!view) throw LoadError(where_ + ": tensor " + name + " is missing");
    const std::string named = view->stored_name.empty() ? name : view->stored_name + " (" + name + ")";
    if (view->dtype == DType::other && !view->quant) {
        throw LoadError(view->file + ": tensor " + named + " has dtype " + view->dtype_text +
                        ", expected BF16, F16 or F32" + (view->file.ends_with(".gguf") ? " (or Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)" : ""));
    }
    if (view->shape != shape) {
        throw LoadError(view->file + ": tensor " + named + " has shape " + shape_text(view->shape) + ", expected " +
                        shape_text(shape));
    }
    return *view;
}

float bf16_to_float(uint16_t bf16) {
    const uint32_t bits = static_cast<uint32_t>(bf16) << 16;
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}

float half_to_float(uint16_t half) {
    const uint32_t sign = (half >> 15) & 1, exponent = (half >> 10) & 0x1F, mantissa = half & 0x3FF;
    float magnitude;
    if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal (or zero)
    } else if (exponent == 31) {
        magnitude = mantissa ? NAN : INFINITY;
    } else {
        magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
    }
    return sign ? -magnitude : magnitude;
}

}  // namespace tf::model
