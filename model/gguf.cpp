#include "model/gguf.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "model/load_error.h"

namespace tf::model {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
// Tensors have at most four axes in ggml; a key or name longer than 64 KiB
// is a corrupt length, not a name.
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxNameBytes = 1 << 16;

struct TypeInfo {
    uint32_t id;
    const char* name;
    GgmlBlock block;
};

// ggml's tensor types with their block sizes (ggml.c's type traits).
constexpr TypeInfo kTypes[] = {
    {0, "F32", {1, 4}},         {1, "F16", {1, 2}},         {2, "Q4_0", {32, 18}},     {3, "Q4_1", {32, 20}},
    {6, "Q5_0", {32, 22}},      {7, "Q5_1", {32, 24}},      {8, "Q8_0", {32, 34}},     {9, "Q8_1", {32, 36}},
    {10, "Q2_K", {256, 84}},    {11, "Q3_K", {256, 110}},   {12, "Q4_K", {256, 144}},  {13, "Q5_K", {256, 176}},
    {14, "Q6_K", {256, 210}},   {15, "Q8_K", {256, 292}},   {16, "IQ2_XXS", {256, 66}}, {17, "IQ2_XS", {256, 74}},
    {18, "IQ3_XXS", {256, 98}}, {19, "IQ1_S", {256, 50}},   {20, "IQ4_NL", {32, 18}},  {21, "IQ3_S", {256, 110}},
    {22, "IQ2_S", {256, 82}},   {23, "IQ4_XS", {256, 136}}, {24, "I8", {1, 1}},        {25, "I16", {1, 2}},
    {26, "I32", {1, 4}},        {27, "I64", {1, 8}},        {28, "F64", {1, 8}},       {29, "IQ1_M", {256, 56}},
    {30, "BF16", {1, 2}},       {34, "TQ1_0", {256, 54}},   {35, "TQ2_0", {256, 66}},  {39, "MXFP4", {32, 17}},
};

const TypeInfo* type_info(uint32_t type) {
    for (const TypeInfo& info : kTypes) {
        if (info.id == type) return &info;
    }
    return nullptr;
}

// Bytes one scalar of a metadata type takes; 0 for string and array.
uint64_t scalar_bytes(GgufType type) {
    switch (type) {
        case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
        case GgufType::u16: case GgufType::i16: return 2;
        case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
        case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
        case GgufType::string: case GgufType::array: return 0;
    }
    return 0;
}

bool is_integer(GgufType t) {
    return t == GgufType::u8 || t == GgufType::i8 || t == GgufType::u16 || t == GgufType::i16 || t == GgufType::u32 ||
           t == GgufType::i32 || t == GgufType::u64 || t == GgufType::i64;
}
bool is_signed(GgufType t) {
    return t == GgufType::i8 || t == GgufType::i16 || t == GgufType::i32 || t == GgufType::i64;
}

// A bounds-checked cursor over one file's bytes.
class Reader {
public:
    Reader(const MappedFile& file) : file_(file), data_(file.data()), size_(file.size()) {}

    [[noreturn]] void fail(const std::string& what) const { throw LoadError(file_.path() + ": " + what); }

    uint64_t left() const { return size_ - at_; }
    uint64_t at() const { return at_; }

    void need(uint64_t bytes, const std::string& what) const {
        if (bytes > left()) {
            fail("truncated: " + what + " needs " + std::to_string(bytes) + " bytes at offset " + std::to_string(at_) +
                 ", the file has " + std::to_string(left()) + " left");
        }
    }
    uint64_t unsigned_bytes(unsigned n, const std::string& what) {
        need(n, what);
        uint64_t value = 0;
        for (unsigned i = n; i-- > 0;) value = (value << 8) | static_cast<uint64_t>(data_[at_ + i]);
        at_ += n;
        return value;
    }
    uint32_t u32(const std::string& what) { return static_cast<uint32_t>(unsigned_bytes(4, what)); }
    uint64_t u64(const std::string& what) { return unsigned_bytes(8, what); }
    std::string string(const std::string& what, uint64_t max_bytes = ~uint64_t{0}) {
        const uint64_t length = u64(what + "'s length");
        if (length > max_bytes) fail(what + " claims " + std::to_string(length) + " bytes, more than a name can be");
        need(length, what);
        std::string text(reinterpret_cast<const char*>(data_ + at_), static_cast<size_t>(length));
        at_ += length;
        return text;
    }
    // A count of items of at least `min_item_bytes` each: more than the file
    // could hold is corrupt, and is refused before anything is reserved.
    uint64_t count(const std::string& what, uint64_t min_item_bytes) {
        const uint64_t n = u64(what);
        if (min_item_bytes > 0 && n > left() / min_item_bytes) {
            fail(what + " is " + std::to_string(n) + ", more than the " + std::to_string(left()) +
                 " bytes left could hold (a truncated or corrupt file)");
        }
        return n;
    }

    GgufType value_type(const std::string& what) {
        const uint32_t raw = u32(what + "'s type");
        if (raw > static_cast<uint32_t>(GgufType::f64)) fail(what + " has value type " + std::to_string(raw) + ", which GGUF does not define");
        return static_cast<GgufType>(raw);
    }

    // One scalar of `type` into `value`'s scalar members.
    void scalar(GgufType type, GgufValue& value, const std::string& what) {
        const uint64_t bits = unsigned_bytes(static_cast<unsigned>(scalar_bytes(type)), what);
        switch (type) {
            case GgufType::boolean:
                if (bits > 1) fail(what + " is a bool holding " + std::to_string(bits));
                value.uint = bits;
                break;
            case GgufType::f32: {
                float f;
                const auto b32 = static_cast<uint32_t>(bits);
                std::memcpy(&f, &b32, 4);
                value.real = f;
                break;
            }
            case GgufType::f64: std::memcpy(&value.real, &bits, 8); break;
            default:
                if (is_signed(type)) {
                    const unsigned width = static_cast<unsigned>(scalar_bytes(type)) * 8;
                    value.sint = width == 64 ? static_cast<int64_t>(bits)
                                             : static_cast<int64_t>(bits << (64 - width)) >> (64 - width);
                } else {
                    value.uint = bits;
                }
        }
    }

    GgufValue value(GgufType type, const std::string& what, int depth = 0) {
        GgufValue value;
        value.type = type;
        if (type == GgufType::string) {
            value.text = string(what);
        } else if (type != GgufType::array) {
            scalar(type, value, what);
        } else {
            value.element = value_type(what + "'s elements");
            const uint64_t item = value.element == GgufType::string || value.element == GgufType::array
                                      ? 8  // at least a length or a count
                                      : scalar_bytes(value.element);
            value.count = count(what + "'s element count", item);
            if (value.element == GgufType::array) {
                // Skipped, not kept: a corrupt nesting cannot recurse far.
                if (depth >= 2) fail(what + " nests arrays deeper than tensorfold reads");
                for (uint64_t i = 0; i < value.count; ++i) {
                    (void)this->value(GgufType::array, what + "[" + std::to_string(i) + "]", depth + 1);
                }
            } else if (value.element == GgufType::string) {
                value.strings.reserve(static_cast<size_t>(value.count));
                for (uint64_t i = 0; i < value.count; ++i) value.strings.push_back(string(what + "[" + std::to_string(i) + "]"));
            } else {
                const bool real = value.element == GgufType::f32 || value.element == GgufType::f64;
                if (real) {
                    value.reals.reserve(static_cast<size_t>(value.count));
                } else {
                    value.ints.reserve(static_cast<size_t>(value.count));
                }
                for (uint64_t i = 0; i < value.count; ++i) {
                    GgufValue one;
                    scalar(value.element, one, what);
                    if (real) {
                        value.reals.push_back(one.real);
                    } else {
                        value.ints.push_back(is_signed(value.element) ? one.sint : static_cast<int64_t>(one.uint));
                    }
                }
            }
        }
        return value;
    }

private:
    const MappedFile& file_;
    const std::byte* data_;
    uint64_t size_;
    uint64_t at_ = 0;
};

struct Header {
    uint32_t version = 0;
    std::map<std::string, GgufValue> metadata;
    std::vector<GgufTensor> tensors;
    uint64_t alignment = 32;
};

Header read_header(const MappedFile& file) {
    Reader r(file);
    Header h;
    if (file.size() < 4 || r.u32("the magic") != kMagic) r.fail("not a GGUF file (it does not start with \"GGUF\")");
    h.version = r.u32("the version");
    if (h.version != 2 && h.version != 3) {
        r.fail("GGUF version " + std::to_string(h.version) + " is not supported (tensorfold reads versions 2 and 3)");
    }
    // A tensor entry takes at least 8+4+4+8 bytes, a key/value 8+4+1.
    const uint64_t tensor_count = r.count("the tensor count", 24);
    const uint64_t kv_count = r.count("the metadata count", 13);
    for (uint64_t i = 0; i < kv_count; ++i) {
        const std::string key = r.string("metadata key " + std::to_string(i), kMaxNameBytes);
        const GgufType type = r.value_type("key " + key);
        GgufValue value = r.value(type, "key " + key);
        if (!h.metadata.emplace(key, std::move(value)).second) r.fail("key " + key + " appears twice");
    }
    if (auto it = h.metadata.find("general.alignment"); it != h.metadata.end()) {
        const GgufValue& a = it->second;
        if (!is_integer(a.type) || is_signed(a.type)) r.fail("general.alignment is a " + std::string(gguf_type_name(a.type)) + ", expected an unsigned integer");
        if (a.uint == 0 || (a.uint & (a.uint - 1)) != 0 || a.uint > (1u << 20)) {
            r.fail("general.alignment " + std::to_string(a.uint) + " is not a power of two up to 1 MiB");
        }
        h.alignment = a.uint;
    }
    std::map<std::string, size_t> names;
    h.tensors.reserve(static_cast<size_t>(tensor_count));
    for (uint64_t i = 0; i < tensor_count; ++i) {
        GgufTensor t;
        t.file = file.path();
        t.name = r.string("tensor name " + std::to_string(i), kMaxNameBytes);
        const std::string what = "tensor " + t.name;
        const uint32_t n_dims = r.u32(what + "'s axis count");
        if (n_dims == 0 || n_dims > kMaxDims) r.fail(what + " has " + std::to_string(n_dims) + " axes (1 to 4 expected)");
        uint64_t elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t dim = r.u64(what + "'s shape");
            if (dim == 0 || dim > (uint64_t{1} << 40) || elements > (uint64_t{1} << 48) / dim) {
                r.fail(what + " has an impossible shape (axis " + std::to_string(d) + " of " + std::to_string(dim) + ")");
            }
            elements *= dim;
            t.dims.push_back(dim);
        }
        t.type = r.u32(what + "'s type");
        const GgmlBlock block = ggml_block(t.type);
        if (block.elements == 0) r.fail(what + " has ggml type " + std::to_string(t.type) + ", which tensorfold does not know");
        if (t.dims[0] % block.elements != 0) {
            r.fail(what + " has rows of " + std::to_string(t.dims[0]) + " elements, not a whole number of " +
                   ggml_type_name(t.type) + " blocks of " + std::to_string(block.elements));
        }
        t.bytes = static_cast<size_t>(elements / block.elements * block.bytes);
        t.offset = r.u64(what + "'s offset");
        if (t.offset % h.alignment != 0) {
            r.fail(what + " starts at data offset " + std::to_string(t.offset) + ", not a multiple of the alignment " +
                   std::to_string(h.alignment));
        }
        if (!names.emplace(t.name, h.tensors.size()).second) r.fail(what + " appears twice");
        h.tensors.push_back(std::move(t));
    }
    const uint64_t data_start = (r.at() + h.alignment - 1) / h.alignment * h.alignment;
    if (data_start > file.size() && !h.tensors.empty()) r.fail("truncated: the tensor data section is missing");
    const uint64_t data_bytes = data_start <= file.size() ? file.size() - data_start : 0;
    // Inside the file, and no two sharing a byte.
    std::vector<const GgufTensor*> by_offset;
    for (GgufTensor& t : h.tensors) {
        if (t.offset > data_bytes || t.bytes > data_bytes - t.offset) {
            r.fail("tensor " + t.name + " (" + std::to_string(t.bytes) + " bytes at data offset " +
                   std::to_string(t.offset) + ") lies outside the file's " + std::to_string(data_bytes) +
                   " data bytes (truncated file?)");
        }
        t.data = file.data() + data_start + t.offset;
        by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const GgufTensor& before = *by_offset[i - 1];
        if (before.offset + before.bytes > by_offset[i]->offset) {
            r.fail("tensors " + before.name + " and " + by_offset[i]->name + " overlap");
        }
    }
    return h;
}

std::string split_path(const std::string& stem, int index, int count) {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", index, count);
    return stem + suffix;
}

}  // namespace

const char* gguf_type_name(GgufType type) {
    switch (type) {
        case GgufType::u8: return "u8";
        case GgufType::i8: return "i8";
        case GgufType::u16: return "u16";
        case GgufType::i16: return "i16";
        case GgufType::u32: return "u32";
        case GgufType::i32: return "i32";
        case GgufType::f32: return "f32";
        case GgufType::boolean: return "bool";
        case GgufType::string: return "string";
        case GgufType::array: return "array";
        case GgufType::u64: return "u64";
        case GgufType::i64: return "i64";
        case GgufType::f64: return "f64";
    }
    return "?";
}

std::string ggml_type_name(uint32_t type) {
    const TypeInfo* info = type_info(type);
    return info ? info->name : "type " + std::to_string(type);
}

GgmlBlock ggml_block(uint32_t type) {
    const TypeInfo* info = type_info(type);
    return info ? info->block : GgmlBlock{};
}

std::optional<GgufSplitName> gguf_split_name(const std::string& path) {
    // "-NNNNN-of-NNNNN.gguf": 20 characters after the stem. Plain parsing
    // rather than <regex>, whose g++ 12 headers do not build warning-free
    // under the sanitizers.
    constexpr size_t kTail = 20;
    if (path.size() <= kTail || !is_gguf_path(path)) return std::nullopt;
    const std::string tail = path.substr(path.size() - kTail, 15);  // "-00002-of-00005"
    const auto digits = [&](size_t from) {
        int value = 0;
        for (size_t i = from; i < from + 5; ++i) {
            if (tail[i] < '0' || tail[i] > '9') return -1;
            value = value * 10 + (tail[i] - '0');
        }
        return value;
    };
    if (tail[0] != '-' || tail.compare(6, 4, "-of-") != 0) return std::nullopt;
    const int index = digits(1), count = digits(10);
    if (index < 0 || count < 2) return std::nullopt;
    return GgufSplitName{path.substr(0, path.size() - kTail), index, count};
}

bool is_gguf_path(const std::string& path) {
    if (path.size() < 5) return false;
    std::string tail = path.substr(path.size() - 5);
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return tail == ".gguf";
}

GgufFile GgufFile::parse(std::shared_ptr<MappedFile> file) {
    GgufFile gguf;
    gguf.path_ = file->path();
    gguf.add_tensors_of(std::move(file), true);
    return gguf;
}

void GgufFile::add_tensors_of(std::shared_ptr<MappedFile> file, bool first) {
    Header h = read_header(*file);
    if (first) {
        version_ = h.version;
        alignment_ = h.alignment;
        metadata_ = std::move(h.metadata);
    }
    for (GgufTensor& t : h.tensors) {
        if (tensor_index_.count(t.name)) {
            throw LoadError(file->path() + ": tensor " + t.name + " is also in " + tensors_[tensor_index_[t.name]].file);
        }
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }
    files_.push_back(std::move(file));
}

GgufFile GgufFile::open(const std::string& path) {
    const auto split = gguf_split_name(path);
    if (!split) return parse(std::make_shared<MappedFile>(path));
    const auto& [stem, index, count] = *split;
    // Otherwise the set would open without the very file asked for.
    if (index < 1 || index > count) {
        throw LoadError(path + ": its name says split " + std::to_string(index) + " of " + std::to_string(count) +
                        ", which no split set has");
    }
    GgufFile gguf;
    gguf.path_ = split_path(stem, 1, count);
    for (int i = 1; i <= count; ++i) {
        const std::string part = split_path(stem, i, count);
        if (!std::filesystem::exists(part)) {
            throw LoadError(path + ": is split " + std::to_string(index) + " of " + std::to_string(count) +
                            ", but " + part + " does not exist");
        }
        gguf.add_tensors_of(std::make_shared<MappedFile>(part), i == 1);
    }
    if (auto expected = gguf.optional_unsigned_int("split.tensors.count"); expected && *expected != gguf.tensors_.size()) {
        throw LoadError(gguf.path_ + ": split.tensors.count says " + std::to_string(*expected) + " tensors, the " +
                        std::to_string(count) + " files hold " + std::to_string(gguf.tensors_.size()));
    }
    return gguf;
}

const GgufValue* GgufFile::find(const std::string& key) const {
    auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::fail_type(const std::string& key, const GgufValue& value, const char* expected) const {
    std::string type = gguf_type_name(value.type);
    if (value.type == GgufType::array) type += " of " + std::string(gguf_type_name(value.element));
    throw LoadError(path_ + ": " + key + " is a " + type + ", expected " + expected);
}

std::optional<std::string> GgufFile::optional_string(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufType::string) fail_type(key, *v, "a string");
    return v->text;
}

std::optional<uint64_t> GgufFile::optional_unsigned_int(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (!is_integer(v->type)) fail_type(key, *v, "an integer");
    if (is_signed(v->type)) {
        if (v->sint < 0) throw LoadError(path_ + ": " + key + " is " + std::to_string(v->sint) + ", expected a count");
        return static_cast<uint64_t>(v->sint);
    }
    return v->uint;
}

std::optional<double> GgufFile::optional_number(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type == GgufType::f32 || v->type == GgufType::f64) return v->real;
    if (!is_integer(v->type)) fail_type(key, *v, "a number");
    return is_signed(v->type) ? static_cast<double>(v->sint) : static_cast<double>(v->uint);
}

std::optional<bool> GgufFile::optional_boolean(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufType::boolean) fail_type(key, *v, "a bool");
    return v->uint != 0;
}

namespace {
template <class T>
T required(const std::optional<T>& value, const std::string& path, const std::string& key) {
    if (!value) throw LoadError(path + ": " + key + " is missing");
    return *value;
}
}  // namespace

std::string GgufFile::string(const std::string& key) const { return required(optional_string(key), path_, key); }
uint64_t GgufFile::unsigned_int(const std::string& key) const { return required(optional_unsigned_int(key), path_, key); }
int32_t GgufFile::count(const std::string& key) const {
    const uint64_t value = unsigned_int(key);
    if (value == 0 || value > INT32_MAX) {
        throw LoadError(path_ + ": " + key + " is " + std::to_string(value) + ", expected a positive count");
    }
    return static_cast<int32_t>(value);
}

double GgufFile::number(const std::string& key) const { return required(optional_number(key), path_, key); }
bool GgufFile::boolean(const std::string& key) const { return required(optional_boolean(key), path_, key); }

const std::vector<std::string>& GgufFile::strings(const std::string& key) const {
    static const std::vector<std::string> none;
    const GgufValue* v = find(key);
    if (!v) return none;
    if (v->type != GgufType::array || v->element != GgufType::string) fail_type(key, *v, "an array of strings");
    return v->strings;
}

const std::vector<int64_t>& GgufFile::ints(const std::string& key) const {
    static const std::vector<int64_t> none;
    const GgufValue* v = find(key);
    if (!v) return none;
    if (v->type != GgufType::array || !(is_integer(v->element) || v->element == GgufType::boolean)) {
        fail_type(key, *v, "an array of integers");
    }
    return v->ints;
}

const std::vector<double>& GgufFile::reals(const std::string& key) const {
    static const std::vector<double> none;
    const GgufValue* v = find(key);
    if (!v) return none;
    if (v->type != GgufType::array || (v->element != GgufType::f32 && v->element != GgufType::f64)) {
        fail_type(key, *v, "an array of numbers");
    }
    return v->reals;
}

}  // namespace tf::model
