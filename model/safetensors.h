// Safetensors checkpoints, memory-mapped: one model.safetensors, or the shards
// named by model.safetensors.index.json. Tensors point into the mapping; no
// copy is made. Every malformed input (truncated file, header length past
// the end, header not JSON, offsets out of range, size not matching shape and
// dtype, index naming a missing shard) throws LoadError naming the file and,
// where there is one, the tensor.
//
// Thread-safety: immutable after open(); safe to read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "model/quant_blocks.h"

namespace tf::model {

enum class DType { bf16, f16, f32, other };

const char* dtype_name(DType dtype);
size_t dtype_bytes(DType dtype);  // 0 for other

// One stored half or bf16 element as fp32; both are exact.
float half_to_float(uint16_t half);
float bf16_to_float(uint16_t bf16);

struct TensorView {
    std::string name;
    DType dtype = DType::other;
    std::string dtype_text;        // as written in the header, e.g. "BF16", "I64"
    std::vector<int64_t> shape;
    const std::byte* data = nullptr;
    size_t bytes = 0;
    std::string file;              // the shard it lives in, for error messages
    // GGUF only: the rows are blocks of this type (quant_blocks.h), dtype
    // is `other` and dtype_text the ggml name ("Q4_K").
    std::optional<QuantType> quant;
    std::string stored_name;  // GGUF only: the file's own name ("blk.0.attn_q.weight"), for messages
};

std::string shape_text(const std::vector<int64_t>& shape);  // "[384, 384]"

// A read-only mmap of one file. Unmapped on destruction.
class MappedFile {
public:
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

class Checkpoint {
public:
    // DIR/model.safetensors.index.json if present (sharded), else
    // DIR/model.safetensors.
    static Checkpoint open(const std::string& dir);
    // One safetensors file.
    static Checkpoint open_file(const std::string& path);
    // Tensors that live elsewhere (a GGUF file under Hugging Face names):
    // `owner` keeps their bytes alive as long as the checkpoint.
    static Checkpoint adopt(std::string where, std::map<std::string, TensorView> tensors,
                            std::shared_ptr<const void> owner);

    // nullptr when absent.
    const TensorView* find(const std::string& name) const;
    // The tensor, checked: present, one of bf16/f16/f32 (or GGUF blocks
    // tensorfold reads), and of `shape`.
    // Throws LoadError "FILE: tensor NAME has shape [..], expected [..]".
    const TensorView& require(const std::string& name, const std::vector<int64_t>& shape) const;

    const std::map<std::string, TensorView>& tensors() const { return tensors_; }
    const std::string& where() const { return where_; }  // the file that names the tensors

private:
    void add_file(const std::string& path, const std::vector<std::string>* only_names);

    std::string where_;
    std::vector<std::shared_ptr<MappedFile>> files_;
    std::shared_ptr<const void> owner_;
    std::map<std::string, TensorView> tensors_;
};

}  // namespace tf::model
