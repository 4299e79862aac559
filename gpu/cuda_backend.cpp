// The CUDA backend (gpu/cuda_backend.h): host code. The kernels live in
// gpu/kernels/ (launchers in gpu/kernels/launch.h); the row checks, chunks,
// graph buckets, row packing and KV block bookkeeping are the pure C++ of
// gpu/forward_plan.h and gpu/kv_blocks.h.
//
// Device memory, allocated once at load:
//  - weights: bf16 matrices (q/k/v stacked into one [q + 2 kv, hidden]
//    matrix, gate and up into one [2 * inter, hidden], so each is one GEMM;
//    stacking changes no output element), fp32 norms and biases. Checkpoints
//    in f16 or f32 are converted to bf16 on upload, rounding to nearest even,
//    so their matmuls see bf16 weights (the CPU backend keeps them exact);
//  - scratch for max(max_rows, 64) rows: residual stream x (fp32), the GEMM
//    input (bf16), qkv and gate|up (fp32), logits (fp32), attention
//    partials, sampler scratch, and the fixed input buffers a captured graph
//    reads (rows, block tables, output rows, samplers);
//  - the KV pools, bf16 keys and values in blocks of kBlockPositions, sized
//    by plan_kv from what memory_fraction leaves.
//
// One forward: check the rows, reserve KV blocks for all of them (or throw
// "KV cache full" having changed nothing), then per chunk: pack the rows,
// copy them into the fixed input buffers, run the layers (replaying the
// bucket's graph, or launching kernel by kernel), copy back the sampled
// tokens and the asked-for logits, and wait.
#include "gpu/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/device_memory.h"
#include "gpu/forward_plan.h"
#include "gpu/kernels/launch.h"
#include "gpu/kv_blocks.h"
#include "model/load_error.h"
#include "model/rope.h"
#include "model/safetensors.h"

namespace tf::gpu {

namespace {

using kernels::bf16_bits;

struct LayerOffsets {
    size_t attn_norm, wqkv, qkv_bias = 0, q_norm = 0, k_norm = 0, wo, o_bias = 0, mlp_norm, w_gate_up, w_down;
};

struct Layer {
    const float* attn_norm = nullptr;
    const bf16_bits* wqkv = nullptr;
    const float* qkv_bias = nullptr;
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    const bf16_bits* wo = nullptr;
    const float* o_bias = nullptr;
    const float* mlp_norm = nullptr;
    const bf16_bits* w_gate_up = nullptr;
    const bf16_bits* w_down = nullptr;
};

void check_supported(const model::ModelConfig& c) {
    auto refuse = [](const std::string& what) {
        throw model::LoadError("config.json: " + what + " is not supported by the CUDA backend");
    };
    if (c.family == model::Family::nemotron || c.family == model::Family::nemotron_h) {
        refuse("architecture " + c.architecture +
               " (its LayerNorm1P, squared-ReLU and Mamba2 layers run on the CPU backend only; pass --device cpu)");
    }
    if (c.moe.enabled()) refuse("architecture " + c.architecture + " (mixtures of experts run on the CPU backend only; pass --device cpu)");
    if (c.head_dim <= 0 || c.head_dim % 2 != 0 || c.head_dim > kernels::kMaxHeadDim) {
        refuse("head_dim " + std::to_string(c.head_dim) + " (it takes an even head_dim up to " +
               std::to_string(kernels::kMaxHeadDim) + ")");
    }
    if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0) {
        refuse(std::to_string(c.num_heads) + " heads over " + std::to_string(c.num_kv_heads) + " kv heads");
    }
    for (auto [name, value] : {std::pair<const char*, int32_t>{"hidden_size", c.hidden_size},
                               {"num_attention_heads * head_dim", c.num_heads * c.head_dim},
                               {"intermediate_size", c.intermediate_size}}) {
        if (value <= 0 || value % 8 != 0) refuse(std::string(name) + " " + std::to_string(value) + " (a multiple of 8 is needed)");
    }
}

class CudaBackend final : public model::Backend {
public:
    CudaBackend(const std::string& dir, const CudaOptions& options, CudaLoadInfo* info);
    ~CudaBackend() override;

    const model::ModelConfig& config() const override { return config_; }
    void open_stream(model::StreamId stream, int32_t capacity) override;
    void close_stream(model::StreamId stream) override { kv_->close(stream); }
    int32_t stream_length(model::StreamId stream) const override { return kv_->length(stream); }
    void truncate(model::StreamId stream, int32_t length) override { kv_->truncate(stream, length); }
    void copy_prefix(model::StreamId from, model::StreamId to, int32_t length) override;
    void forward(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                 model::RowOutputs& out) override;
    using Backend::forward;

private:
    // The device is current per thread, and forward runs on whichever actor
    // thread holds the backend: every entry point that touches the device
    // selects it first (cheap when it is already current).
    void select_device() const { TF_CUDA_CHECK(cudaSetDevice(options_.device)); }
    void run_chunk(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                   model::RowOutputs& out, size_t& token_at, size_t& logits_at);
    // Every kernel of one chunk: `count` rows, `outputs` output rows.
    void launch_layers(int32_t count, int32_t outputs, int32_t workers);
    cudaGraphExec_t graph_for(int32_t bucket, int32_t workers);

    model::ModelConfig config_;
    CudaOptions options_;
    int32_t rows_capacity_ = 0;  // rows the scratch holds
    int64_t split_budget_ = 0;   // attention partial slots (per head)
    int32_t q_dim_ = 0, kv_dim_ = 0, qkv_dim_ = 0;
    cudaStream_t stream_ = nullptr;

    DeviceMemory weights_;
    std::vector<Layer> layers_;
    const bf16_bits* embedding_ = nullptr;
    const bf16_bits* lm_head_ = nullptr;
    const float* final_norm_ = nullptr;
    DeviceMemory inv_freq_;

    DeviceMemory x_, act_, qkv_, gate_up_, logits_, partial_ml_, partial_acc_, sample_keys_, sample_weights_, tokens_;
    DeviceMemory in_rows_, in_out_rows_, in_samplers_, in_tables_, in_pairs_;
    PinnedMemory host_rows_, host_out_rows_, host_samplers_, host_tables_, host_pairs_, host_tokens_;

    kernels::KvShape shape_;
    DeviceMemory keys_, values_;
    std::unique_ptr<KvBlocks> kv_;
    std::map<std::pair<int32_t, int32_t>, cudaGraphExec_t> graphs_;
};

CudaBackend::CudaBackend(const std::string& dir, const CudaOptions& options, CudaLoadInfo* info)
    : options_(options) {
    const auto started = std::chrono::steady_clock::now();
    if (options.max_rows <= 0) throw std::invalid_argument("max_rows must be positive");
    std::string why;
    const std::vector<DeviceInfo> devices = list_devices(&why);
    if (devices.empty()) throw std::runtime_error("no CUDA device: " + why);
    if (options.device < 0 || options.device >= static_cast<int>(devices.size())) {
        throw std::runtime_error("CUDA device " + std::to_string(options.device) + " does not exist (" +
                                 std::to_string(devices.size()) + " found)");
    }
    const DeviceInfo& device = devices[static_cast<size_t>(options.device)];
    if (device.compute_major < 8) {
        throw std::runtime_error("CUDA device " + device.name + " has compute capability " +
                                 std::to_string(device.compute_major) + "." + std::to_string(device.compute_minor) +
                                 "; bf16 tensor cores need 8.0 or later");
    }

    config_ = model::load_model_config(dir);
    check_supported(config_);
    const model::Checkpoint checkpoint = model::Checkpoint::open(dir);
    const model::ModelConfig& c = config_;
    const int64_t hidden = c.hidden_size, inter = c.intermediate_size, vocab = c.vocab_size;
    q_dim_ = c.num_heads * c.head_dim;
    kv_dim_ = c.num_kv_heads * c.head_dim;
    qkv_dim_ = q_dim_ + 2 * kv_dim_;

    TF_CUDA_CHECK(cudaSetDevice(options.device));
    TF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));

    // Weights: where each tensor goes.
    WeightUploader up;
    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
        return &checkpoint.require(name, {rows, cols});
    };
    auto vector = [&](const std::string& name, int64_t size) { return &checkpoint.require(name, {size}); };
    const size_t embedding_at = up.add({matrix("model.embed_tokens.weight", vocab, hidden)}, false);
    std::vector<LayerOffsets> offsets;
    for (int32_t i = 0; i < c.num_layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        LayerOffsets o;
        o.attn_norm = up.add({vector(p + "input_layernorm.weight", hidden)}, true);
        o.wqkv = up.add({matrix(p + "self_attn.q_proj.weight", q_dim_, hidden),
                         matrix(p + "self_attn.k_proj.weight", kv_dim_, hidden),
                         matrix(p + "self_attn.v_proj.weight", kv_dim_, hidden)},
                        false);
        if (c.qkv_bias) {
            o.qkv_bias = up.add({vector(p + "self_attn.q_proj.bias", q_dim_), vector(p + "self_attn.k_proj.bias", kv_dim_),
                                 vector(p + "self_attn.v_proj.bias", kv_dim_)},
                                true);
        }
        if (c.qk_norm) {
            o.q_norm = up.add({vector(p + "self_attn.q_norm.weight", c.head_dim)}, true);
            o.k_norm = up.add({vector(p + "self_attn.k_norm.weight", c.head_dim)}, true);
        }
        o.wo = up.add({matrix(p + "self_attn.o_proj.weight", hidden, q_dim_)}, false);
        if (c.o_bias) o.o_bias = up.add({vector(p + "self_attn.o_proj.bias", hidden)}, true);
        o.mlp_norm = up.add({vector(p + "post_attention_layernorm.weight", hidden)}, true);
        o.w_gate_up = up.add({matrix(p + "mlp.gate_proj.weight", inter, hidden), matrix(p + "mlp.up_proj.weight", inter, hidden)},
                             false);
        o.w_down = up.add({matrix(p + "mlp.down_proj.weight", hidden, inter)}, false);
        offsets.push_back(o);
    }
    const size_t final_norm_at = up.add({vector("model.norm.weight", hidden)}, true);
    // Tied: the embedding is the lm_head (transformers ignores a stored lm_head.weight then).
    const size_t lm_head_at =
        c.tie_word_embeddings ? embedding_at : up.add({matrix("lm_head.weight", vocab, hidden)}, false);

    // Scratch for rows_capacity_ rows, and the attention partials' room.
    const ScratchPlan sz = plan_scratch(c, options.max_rows);
    rows_capacity_ = sz.rows;
    split_budget_ = sz.split_budget;
    const size_t scratch = sz.total();

    // The KV pool from what is left.
    size_t free_bytes = 0, total_bytes = 0;
    TF_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    KvPlanInput plan_in;
    plan_in.device_total_bytes = total_bytes;
    plan_in.device_free_bytes = free_bytes;
    plan_in.memory_fraction = options.memory_fraction;
    plan_in.weight_bytes = up.size();
    plan_in.scratch_bytes = scratch;
    plan_in.kv_bytes_per_position = static_cast<size_t>(c.num_layers) * 2 * kv_dim_ * 2;
    plan_in.reserve_bytes = size_t{256} << 20;
    plan_in.max_tokens = options.max_kv_tokens;
    const KvPlan plan = plan_kv(plan_in);  // throws when the weights do not fit

    weights_ = DeviceMemory(up.size());
    up.upload(weights_, stream_);
    embedding_ = weights_.get<bf16_bits>(embedding_at);
    lm_head_ = weights_.get<bf16_bits>(lm_head_at);
    final_norm_ = weights_.get<float>(final_norm_at);
    for (const LayerOffsets& o : offsets) {
        Layer l;
        l.attn_norm = weights_.get<float>(o.attn_norm);
        l.wqkv = weights_.get<bf16_bits>(o.wqkv);
        l.qkv_bias = c.qkv_bias ? weights_.get<float>(o.qkv_bias) : nullptr;
        l.q_norm = c.qk_norm ? weights_.get<float>(o.q_norm) : nullptr;
        l.k_norm = c.qk_norm ? weights_.get<float>(o.k_norm) : nullptr;
        l.wo = weights_.get<bf16_bits>(o.wo);
        l.o_bias = c.o_bias ? weights_.get<float>(o.o_bias) : nullptr;
        l.mlp_norm = weights_.get<float>(o.mlp_norm);
        l.w_gate_up = weights_.get<bf16_bits>(o.w_gate_up);
        l.w_down = weights_.get<bf16_bits>(o.w_down);
        layers_.push_back(l);
    }
    const std::vector<float> inv_freq = model::rope_inv_freq(c);
    inv_freq_ = DeviceMemory(inv_freq.size() * 4);
    TF_CUDA_CHECK(cudaMemcpy(inv_freq_.get(), inv_freq.data(), inv_freq.size() * 4, cudaMemcpyHostToDevice));

    x_ = DeviceMemory(sz.x);
    act_ = DeviceMemory(sz.act);
    qkv_ = DeviceMemory(sz.qkv);
    gate_up_ = DeviceMemory(sz.gate_up);
    logits_ = DeviceMemory(sz.logits);
    partial_ml_ = DeviceMemory(sz.partial_ml);
    partial_acc_ = DeviceMemory(sz.partial_acc);
    sample_keys_ = DeviceMemory(sz.sample_keys);
    sample_weights_ = DeviceMemory(sz.sample_weights);
    tokens_ = DeviceMemory(sz.tokens);
    in_rows_ = DeviceMemory(sz.device_rows);
    in_out_rows_ = DeviceMemory(sz.out_rows);
    in_samplers_ = DeviceMemory(sz.samplers);
    host_rows_ = PinnedMemory(sz.device_rows);
    host_out_rows_ = PinnedMemory(sz.out_rows);
    host_samplers_ = PinnedMemory(sz.samplers);
    host_tokens_ = PinnedMemory(sz.tokens);

    shape_.heads = c.num_heads;
    shape_.kv_heads = c.num_kv_heads;
    shape_.head_dim = c.head_dim;
    shape_.num_blocks = plan.blocks;
    const size_t pool_bytes = static_cast<size_t>(c.num_layers) * plan.blocks * shape_.block_elems() * 2;
    keys_ = DeviceMemory(pool_bytes);
    values_ = DeviceMemory(pool_bytes);
    kv_ = std::make_unique<KvBlocks>(plan.blocks);
    // Block tables: a chunk's streams own distinct blocks, so the pool's
    // block count bounds their total; copy_prefix pairs likewise.
    const size_t table_bytes = static_cast<size_t>(plan.blocks) * 4;
    in_tables_ = DeviceMemory(table_bytes);
    host_tables_ = PinnedMemory(table_bytes);
    in_pairs_ = DeviceMemory(2 * table_bytes);
    host_pairs_ = PinnedMemory(2 * table_bytes);

    // Every kernel runs once before any graph capture: a module the runtime
    // loads lazily is then loaded outside a capture. One padding row with an
    // inactive sampler writes nothing to the KV cache.
    TF_CUDA_CHECK(cudaMemsetAsync(in_rows_.get(), 0, sizeof(DeviceRow), stream_));
    TF_CUDA_CHECK(cudaMemsetAsync(in_out_rows_.get(), 0, sizeof(int32_t), stream_));
    TF_CUDA_CHECK(cudaMemsetAsync(in_samplers_.get(), 0, sizeof(DeviceSampler), stream_));
    launch_layers(1, 1, 1);
    TF_CUDA_CHECK(cudaStreamSynchronize(stream_));

    if (info) {
        info->device_name = device.name;
        info->weight_bytes = up.size();
        info->kv_tokens = plan.tokens;
        info->scratch_bytes = scratch;
        info->load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    }
}

CudaBackend::~CudaBackend() {
    cudaSetDevice(options_.device);  // no throw from a destructor; the calls below fail alike if this does
    for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
    if (stream_) {
        cudaStreamSynchronize(stream_);
        cudaStreamDestroy(stream_);
    }
}

void CudaBackend::open_stream(model::StreamId stream, int32_t capacity) {
    if (capacity > 0 && row_splits(capacity - 1, config_.sliding_window) > split_budget_) {
        throw std::invalid_argument("stream capacity " + std::to_string(capacity) +
                                    " needs more attention splits than the CUDA backend has room for (" +
                                    std::to_string(split_budget_) + ")");
    }
    kv_->open(stream, capacity);
}

void CudaBackend::copy_prefix(model::StreamId from, model::StreamId to, int32_t length) {
    select_device();
    const auto pairs = kv_->copy_prefix(from, to, length);
    if (pairs.empty()) return;
    auto* host = host_pairs_.get<int32_t>();
    for (size_t i = 0; i < pairs.size(); ++i) {
        host[2 * i] = pairs[i].first;
        host[2 * i + 1] = pairs[i].second;
    }
    TF_CUDA_CHECK(cudaMemcpyAsync(in_pairs_.get(), host, pairs.size() * 8, cudaMemcpyHostToDevice, stream_));
    kernels::copy_kv_blocks(in_pairs_.get<int32_t>(), static_cast<int32_t>(pairs.size()), config_.num_layers, shape_,
                            keys_.get<bf16_bits>(), values_.get<bf16_bits>(), stream_);
    TF_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::forward(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                          model::RowOutputs& out) {
    const auto lengths = check_rows(rows, samplers.size(), config_.vocab_size, *kv_);
    size_t wanted = 0, sampled = 0;
    for (const model::Row& row : rows) {
        wanted += row.want_logits ? 1 : 0;
        sampled += row.sampler >= 0 ? 1 : 0;
    }
    out.logits.resize(wanted * static_cast<size_t>(config_.vocab_size));
    out.tokens.resize(sampled);
    if (rows.empty()) return;
    select_device();
    kv_->reserve(lengths);  // "KV cache full" before anything changes
    size_t token_at = 0, logits_at = 0;
    for (const auto& [begin, end] : plan_chunks(rows, options_.max_rows, split_budget_, config_.sliding_window)) {
        run_chunk(rows.subspan(begin, end - begin), samplers, out, token_at, logits_at);
    }
    for (const auto& [stream, length] : lengths) kv_->set_length(stream, length);
}

void CudaBackend::run_chunk(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                            model::RowOutputs& out, size_t& token_at, size_t& logits_at) {
    const int32_t bucket = options_.use_graphs ? graph_bucket(static_cast<int32_t>(rows.size())) : 0;
    const ChunkInputs in = pack_chunk(rows, samplers, *kv_, config_.sliding_window, bucket);
    const auto count = static_cast<int32_t>(in.rows.size());
    const auto outputs = static_cast<int32_t>(in.out_rows.size());
    const int32_t workers = split_workers(in.max_splits);
    TF_GPU_REQUIRE(count <= rows_capacity_ && outputs <= rows_capacity_, "run_chunk: chunk larger than the scratch");
    TF_GPU_REQUIRE(in.total_splits <= split_budget_, "run_chunk: chunk needs more attention partials than planned");
    TF_GPU_REQUIRE(static_cast<int64_t>(in.tables.size()) <= shape_.num_blocks, "run_chunk: block tables overflow");

    // Inputs: pinned copies, then the fixed device buffers a graph reads.
    std::memcpy(host_rows_.get(), in.rows.data(), in.rows.size() * sizeof(DeviceRow));
    TF_CUDA_CHECK(cudaMemcpyAsync(in_rows_.get(), host_rows_.get(), in.rows.size() * sizeof(DeviceRow),
                                  cudaMemcpyHostToDevice, stream_));
    if (!in.tables.empty()) {
        std::memcpy(host_tables_.get(), in.tables.data(), in.tables.size() * 4);
        TF_CUDA_CHECK(cudaMemcpyAsync(in_tables_.get(), host_tables_.get(), in.tables.size() * 4,
                                      cudaMemcpyHostToDevice, stream_));
    }
    if (outputs > 0) {
        std::memcpy(host_out_rows_.get(), in.out_rows.data(), in.out_rows.size() * 4);
        TF_CUDA_CHECK(cudaMemcpyAsync(in_out_rows_.get(), host_out_rows_.get(), in.out_rows.size() * 4,
                                      cudaMemcpyHostToDevice, stream_));
        std::memcpy(host_samplers_.get(), in.samplers.data(), in.samplers.size() * sizeof(DeviceSampler));
        TF_CUDA_CHECK(cudaMemcpyAsync(in_samplers_.get(), host_samplers_.get(), in.samplers.size() * sizeof(DeviceSampler),
                                      cudaMemcpyHostToDevice, stream_));
    }

    if (bucket > 0) {
        TF_CUDA_CHECK(cudaGraphLaunch(graph_for(bucket, workers), stream_));
    } else {
        launch_layers(count, outputs, workers);
    }

    // Outputs: sampled tokens, and logits rows (consecutive ones in one copy).
    if (!in.token_outputs.empty()) {
        TF_CUDA_CHECK(cudaMemcpyAsync(host_tokens_.get(), tokens_.get(), static_cast<size_t>(outputs) * 4,
                                      cudaMemcpyDeviceToHost, stream_));
    }
    const size_t vocab = static_cast<size_t>(config_.vocab_size);
    for (size_t w = 0; w < in.logits_outputs.size();) {
        size_t n = 1;
        while (w + n < in.logits_outputs.size() && in.logits_outputs[w + n] == in.logits_outputs[w] + static_cast<int32_t>(n)) ++n;
        TF_CUDA_CHECK(cudaMemcpyAsync(out.logits.data() + (logits_at + w) * vocab,
                                      logits_.get<float>() + static_cast<size_t>(in.logits_outputs[w]) * vocab,
                                      n * vocab * 4, cudaMemcpyDeviceToHost, stream_));
        w += n;
    }
    TF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const auto* tokens = host_tokens_.get<int32_t>();
    for (int32_t o : in.token_outputs) out.tokens[token_at++] = tokens[o];
    logits_at += in.logits_outputs.size();
}

cudaGraphExec_t CudaBackend::graph_for(int32_t bucket, int32_t workers) {
    const auto key = std::make_pair(bucket, workers);
    if (auto it = graphs_.find(key); it != graphs_.end()) return it->second;
    cudaGraph_t graph = nullptr;
    TF_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
        launch_layers(bucket, bucket, workers);
    } catch (...) {
        cudaStreamEndCapture(stream_, &graph);
        if (graph) cudaGraphDestroy(graph);
        throw;
    }
    TF_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    TF_CUDA_CHECK(status);
    graphs_.emplace(key, exec);
    return exec;
}

void CudaBackend::launch_layers(int32_t count, int32_t outputs, int32_t workers) {
    const model::ModelConfig& c = config_;
    const int32_t hidden = c.hidden_size, inter = c.intermediate_size, vocab = c.vocab_size;
    const float eps = c.rms_norm_eps;
    auto* rows = in_rows_.get<DeviceRow>();
    auto* tables = in_tables_.get<int32_t>();
    auto* x = x_.get<float>();
    auto* act = act_.get<bf16_bits>();
    auto* qkv = qkv_.get<float>();
    auto* gate_up = gate_up_.get<float>();
    const size_t layer_elems = static_cast<size_t>(shape_.num_blocks) * shape_.block_elems();

    kernels::embed(embedding_, hidden, rows, count, x, stream_);
    for (int32_t i = 0; i < c.num_layers; ++i) {
        const Layer& l = layers_[static_cast<size_t>(i)];
        bf16_bits* keys = keys_.get<bf16_bits>() + i * layer_elems;
        bf16_bits* values = values_.get<bf16_bits>() + i * layer_elems;

        kernels::rmsnorm(x, hidden, l.attn_norm, hidden, eps, nullptr, count, act, hidden, stream_);
        kernels::gemm({act, hidden, l.wqkv, hidden, l.qkv_bias, qkv, qkv_dim_, count, qkv_dim_, hidden, false}, stream_);
        kernels::qk_rope_kv(qkv, qkv_dim_, l.q_norm, l.k_norm, eps, inv_freq_.get<float>(), rows, count, tables, shape_,
                            keys, values, stream_);
        kernels::attention(qkv, qkv_dim_, keys, values, rows, count, tables, shape_, workers, partial_ml_.get<float>(),
                           partial_acc_.get<float>(), act, q_dim_, stream_);
        kernels::gemm({act, q_dim_, l.wo, q_dim_, l.o_bias, x, hidden, count, hidden, q_dim_, true}, stream_);

        kernels::rmsnorm(x, hidden, l.mlp_norm, hidden, eps, nullptr, count, act, hidden, stream_);
        kernels::gemm({act, hidden, l.w_gate_up, hidden, nullptr, gate_up, 2 * inter, count, 2 * inter, hidden, false},
                      stream_);
        kernels::swiglu(gate_up, inter, count, act, stream_);
        kernels::gemm({act, inter, l.w_down, inter, nullptr, x, hidden, count, hidden, inter, true}, stream_);
    }
    if (outputs == 0) return;
    kernels::rmsnorm(x, hidden, final_norm_, hidden, eps, in_out_rows_.get<int32_t>(), outputs, act, hidden, stream_);
    kernels::gemm({act, hidden, lm_head_, hidden, nullptr, logits_.get<float>(), vocab, outputs, vocab, hidden, false},
                  stream_);
    kernels::sample(logits_.get<float>(), vocab, in_samplers_.get<DeviceSampler>(), outputs,
                    sample_keys_.get<unsigned long long>(), sample_weights_.get<double>(), tokens_.get<int32_t>(),
                    stream_);
}

}  // namespace

std::unique_ptr<model::Backend> load_cuda_backend(const std::string& dir, const CudaOptions& options,
                                                  CudaLoadInfo* info) {
    return std::make_unique<CudaBackend>(dir, options, info);
}

}  // namespace tf::gpu
