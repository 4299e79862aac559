// ServerConfig: everything `tensorfold serve` was told on its command line,
// validated and with defaults filled in. Plain data; safe to copy between
// threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tf::config {

enum class Device { automatic, cpu, cuda };

// One recall chunk file holds 1,048,576 ids of 4 bytes (seed: "chunk files of
// up to 1,048,576 ids (4 MiB)"); a record smaller than one chunk cannot hold
// anything, so --recall-gib below this is rejected.
inline constexpr uint64_t kRecallChunkIds = 1u << 20;
inline constexpr uint64_t kRecallChunkBytes = kRecallChunkIds * 4;
inline constexpr uint64_t kBytesPerGib = uint64_t{1} << 30;
inline constexpr double kDefaultRecallGib = 1.0 / 16;  // seed: "1/16 GiB (64 MiB) by default"
inline constexpr double kMaxRecallGib = 16384;         // 16 TiB; the key table alone would be 2 TiB

struct RecallConfig {
    bool enabled = false;    // --recall, or implied by any other --recall-* flag
    std::string dir;         // --recall-dir; empty: ~/.cache/tensorfold/recall/<tokenizer name>
    double gib = kDefaultRecallGib;
    bool read_only = false;  // --recall-read-only

    uint64_t disk_bytes() const { return static_cast<uint64_t>(gib * static_cast<double>(kBytesPerGib)); }
};

struct ServerConfig {
    std::string model_dir;          // a local Hugging Face model directory
    std::string host = "127.0.0.1";
    int port = 8000;                // 0: let the kernel pick a free port
    std::string api_key;            // empty: no authentication
    std::string served_model_name;  // empty: the model directory's name
    // --model-alias, repeatable: more names requests may give the served
    // model; "*" takes any name (Claude Code names Claude models).
    std::vector<std::string> model_aliases;
    int ctx_size = 0;               // 0: the model's max_position_embeddings
    int max_streams = 16;
    int threads = 0;                // 0: every core the process may use
    Device device = Device::automatic;
    std::string quantize;           // --quantize: q8_0, q4_0, q4_k or q6_k (CPU backend); empty: none
    std::string kv_type;            // --kv-type: f32, f16, bf16 or q8_0; empty: the backend's own (f16 CPU, bf16 CUDA)
    double gpu_memory_fraction = 0.90;
    int draft_tokens = 32;              // longest own-context draft; 0: no own-context drafts  // share of the GPU's memory for weights, KV cache and scratch
    std::string log_level = "info";
    RecallConfig recall;
};

const char* to_string(Device device);

// The backend `--device` comes to, given what this binary and machine have.
// `note` says why auto fell back to the CPU (empty otherwise). Throws
// std::invalid_argument, naming --device, when cuda was asked for and
// cannot be had. Pure: the caller asks gpu::list_devices().
struct DeviceChoice {
    Device device = Device::cpu;
    std::string note;
};
DeviceChoice resolve_device(Device requested, bool built_with_cuda, int cuda_devices, const std::string& why_none);

// One line per setting, for the startup log and for `serve` before the
// server exists. Never prints the API key itself.
std::string describe(const ServerConfig& config);

}  // namespace tf::config
