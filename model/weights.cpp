#include "model/weights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "model/kernels/matmul.h"
#include "model/load_error.h"

namespace tf::model {

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

namespace {

// Element i of a tensor as fp32.
float element(const TensorView& t, size_t i) {
    if (t.dtype == DType::f32) {
        float value;
        std::memcpy(&value, t.data + 4 * i, 4);
        return value;
    }
    uint16_t bits;
    std::memcpy(&bits, t.data + 2 * i, 2);
    return t.dtype == DType::bf16 ? bf16_to_float(bits) : half_to_float(bits);
}

}  // namespace

std::unique_ptr<Weights> Weights::load(const std::string& dir) {
    ModelConfig config = load_model_config(dir);
    return load(config, Checkpoint::open(dir));
}

WeightMatrix Weights::matrix(const std::string& name, int64_t rows, int64_t cols) {
    const TensorView& t = checkpoint_.require(name, {rows, cols});
    const auto start = std::chrono::steady_clock::now();
    struct Timer {
        std::chrono::steady_clock::time_point start;
        double& total;
        ~Timer() { total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); }
    } timer{start, prepare_ms_};
    WeightMatrix w;
    w.rows = static_cast<int32_t>(rows);
    w.cols = static_cast<int32_t>(cols);
    w.stride = kernels::padded_k(w.cols);
    if (t.dtype == DType::bf16) {
        const size_t elements = static_cast<size_t>(kernels::tiled_rows(w.rows)) * w.stride;
        auto* tiled = static_cast<uint16_t*>(std::aligned_alloc(64, elements * 2));
        if (!tiled) throw LoadError(name + ": out of memory for " + std::to_string(elements * 2) + " bytes of weights");
        owned_bf16_.emplace_back(tiled);
        // The padding rows of the last tile, then every real row; tiles go
        // to threads (first touch of a copy as large as the checkpoint).
        const size_t first_padding = kernels::tiled_offset(w.rows / kernels::kTileRows * kernels::kTileRows, 0, w.stride);
        std::memset(tiled + first_padding, 0, (elements - first_padding) * 2);
        const auto* source = reinterpret_cast<const uint16_t*>(t.data);
        const int32_t tiles = kernels::tiled_rows(w.rows) / kernels::kTileRows;
        const int32_t workers = std::clamp<int32_t>(static_cast<int32_t>(elements >> 20), 1,
                                                    static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
        auto tile_part = [&](int32_t part) {
            const int32_t begin = tiles * part / workers * kernels::kTileRows;
            const int32_t end = std::min(w.rows, tiles * (part + 1) / workers * kernels::kTileRows);
            if (begin < end) kernels::tile_bf16_rows(source, w.cols, static_cast<size_t>(cols), w.stride, begin, end, tiled);
        };
        std::vector<std::thread> helpers;
        for (int32_t part = 1; part < workers; ++part) helpers.emplace_back(tile_part, part);
        tile_part(0);
        for (std::thread& helper : helpers) helper.join();
        w.format = kernels::WeightFormat::bf16_tiled;
        w.data = tiled;
        return w;
    }
    auto& split = owned_f32_.emplace_back(static_cast<size_t>(rows) * w.stride, 0.0f);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) row[c] = element(t, static_cast<size_t>(r * cols + c));
        kernels::split_pairs(row.data(), w.cols, &split[r * w.stride]);
    }
    w.format = kernels::WeightFormat::f32_split;
    w.data = split.data();
    return w;
}

const float* Weights::vector(const std::string& name, int64_t size) {
    const TensorView& t = checkpoint_.require(name, {size});
    auto& values = owned_f32_.emplace_back(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) values[i] = element(t, static_cast<size_t>(i));
    return values.data();
}

std::unique_ptr<Weights> Weights::load(const ModelConfig& config, Checkpoint checkpoint) {
    auto w = std::unique_ptr<Weights>(new Weights());
    w->config_ = config;
    w->checkpoint_ = std::move(checkpoint);
    const ModelConfig& c = w->config_;
    const int64_t hidden = c.hidden_size, q_dim = int64_t{c.num_heads} * c.head_dim,
                  kv_dim = int64_t{c.num_kv_heads} * c.head_dim, inter = c.intermediate_size, vocab = c.vocab_size;

    w->embed_ = &w->checkpoint_.require("model.embed_tokens.weight", {vocab, hidden});
    for (int32_t i = 0; i < c.num_layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.attn_norm = w->vector(p + "input_layernorm.weight", hidden);
        l.wq = w->matrix(p + "self_attn.q_proj.weight", q_dim, hidden);
        l.wk = w->matrix(p + "self_attn.k_proj.weight", kv_dim, hidden);
        l.wv = w->matrix(p + "self_attn.v_proj.weight", kv_dim, hidden);
        l.wo = w->matrix(p + "self_attn.o_proj.weight", hidden, q_dim);
        if (c.qkv_bias) {
            l.q_bias = w->vector(p + "self_attn.q_proj.bias", q_dim);
            l.k_bias = w->vector(p + "self_attn.k_proj.bias", kv_dim);
            l.v_bias = w->vector(p + "self_attn.v_proj.bias", kv_dim);
        }
        if (c.o_bias) l.o_bias = w->vector(p + "self_attn.o_proj.bias", hidden);
        if (c.qk_norm) {
            l.q_norm = w->vector(p + "self_attn.q_norm.weight", c.head_dim);
            l.k_norm = w->vector(p + "self_attn.k_norm.weight", c.head_dim);
        }
        l.mlp_norm = w->vector(p + "post_attention_layernorm.weight", hidden);
        l.w_gate = w->matrix(p + "mlp.gate_proj.weight", inter, hidden);
        l.w_up = w->matrix(p + "mlp.up_proj.weight", inter, hidden);
        l.w_down = w->matrix(p + "mlp.down_proj.weight", hidden, inter);
        w->layers_.push_back(l);
    }
    w->final_norm_ = w->vector("model.norm.weight", hidden);
    // Tied: transformers ties lm_head to the embedding even when a checkpoint
    // also carries an lm_head.weight, so the embedding is what counts.
    w->lm_head_ = w->matrix(c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight", vocab, hidden);
    return w;
}

void Weights::embed(int32_t token, float* out) const {
    const size_t hidden = static_cast<size_t>(config_.hidden_size);
    for (size_t i = 0; i < hidden; ++i) out[i] = element(*embed_, static_cast<size_t>(token) * hidden + i);
}

size_t Weights::matmul_bytes() const {
    auto bytes = [](const WeightMatrix& m) {
        switch (m.format) {
            case kernels::WeightFormat::bf16: return static_cast<size_t>(m.rows) * m.stride * 2;
            case kernels::WeightFormat::bf16_tiled: return static_cast<size_t>(kernels::tiled_rows(m.rows)) * m.stride * 2;
            case kernels::WeightFormat::f32_split: return static_cast<size_t>(m.rows) * m.stride * 4;
        }
        return size_t{0};
    };
    size_t total = bytes(lm_head_);
    for (const LayerWeights& l : layers_) {
        for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) total += bytes(*m);
    }
    return total;
}

}  // namespace tf::model
