#include "cpu/weights.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "cpu/kernels/matmul.h"
#include "cpu/kernels/quant_matmul.h"
#include "model/gguf_model.h"
#include "model/load_error.h"

namespace tf::cpu {

namespace {

// Element i of a tensor as fp32.
float element(const model::TensorView& t, size_t i) {
    if (t.dtype == model::DType::f32) {
        float value;
        std::memcpy(&value, t.data + 4 * i, 4);
        return value;
    }
    uint16_t bits;
    std::memcpy(&bits, t.data + 2 * i, 2);
    return t.dtype == model::DType::bf16 ? model::bf16_to_float(bits) : model::half_to_float(bits);
}

}  // namespace

std::unique_ptr<Weights> Weights::load(const std::string& dir, const WeightOptions& options) {
    if (std::optional<std::string> gguf = model::find_gguf_model(dir)) {
        auto file = std::make_shared<const model::GgufFile>(model::GgufFile::open(*gguf));
        const model::ModelConfig config = model::gguf_model_config(*file);
        return load(config, model::gguf_checkpoint(file, config), options);
    }
    model::ModelConfig config = model::load_model_config(dir);
    return load(config, model::Checkpoint::open(dir), options);
}

namespace {

// Runs fn(begin, end) over [0, count) cut into one part per core, on
// threads of its own: load() runs before the backend's pool exists, and
// its copies are as large as the checkpoint.
template <class Fn>
void on_every_core(int64_t count, int64_t grain, Fn&& fn) {
    const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const int64_t parts = std::clamp<int64_t>(count / std::max<int64_t>(grain, 1), 1, cores);
    auto part = [&](int64_t p) { fn(count * p / parts, count * (p + 1) / parts); };
    std::vector<std::thread> helpers;
    for (int64_t p = 1; p < parts; ++p) helpers.emplace_back(part, p);
    part(0);
    for (std::thread& helper : helpers) helper.join();
}

uint8_t* aligned_bytes(size_t bytes, const std::string& name) {
    void* memory = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!memory) throw model::LoadError(name + ": out of memory for " + std::to_string(bytes) + " bytes of weights");
    return static_cast<uint8_t*>(memory);
}

}  // namespace

void Weights::report_progress(const std::string& what) {
    ++matrices_done_;
    if (!options_.progress) return;
    const auto now = std::chrono::steady_clock::now();
    const double running = std::chrono::duration<double>(now - load_start_).count();
    if (running < options_.progress_after_seconds ||
        std::chrono::duration<double>(now - last_progress_).count() < options_.progress_every_seconds) {
        return;
    }
    last_progress_ = now;
    const int32_t total = matrices_expected_;
    char line[256];
    std::snprintf(line, sizeof line, "quantizing to %s: matrix %d of %d (%s), %.1f s",
                  model::quant_type_name(*options_.quantize), std::min(matrices_done_, total), total, what.c_str(),
                  running);
    options_.progress(line);
}

WeightMatrix Weights::quantized_matrix(const model::TensorView& t, model::QuantType type, int32_t rows, int32_t cols) {
    // GGUF's blocks first, row by row on every core; then the kernel's layout.
    const size_t gguf_row_bytes = model::quant_row_bytes(type, cols);
    std::vector<uint8_t> gguf(gguf_row_bytes * static_cast<size_t>(rows));
    on_every_core(rows, 16, [&](int64_t begin, int64_t end) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = begin; r < end; ++r) {
            for (int32_t c = 0; c < cols; ++c) row[c] = element(t, static_cast<size_t>(r) * cols + c);
            model::quantize_row(type, row.data(), cols, gguf.data() + static_cast<size_t>(r) * gguf_row_bytes);
        }
    });
    return repacked_matrix(gguf.data(), type, rows, cols, t.name);
}

WeightMatrix Weights::repacked_matrix(const uint8_t* gguf_rows, model::QuantType type, int32_t rows, int32_t cols,
                                      const std::string& name) {
    // Tiles of 16 interleaved rows (quant_layout.h); tiles are independent,
    // so every core repacks its share of them.
    const size_t gguf_row_bytes = model::quant_row_bytes(type, cols);
    uint8_t* data = aligned_bytes(kernels::quant_kernel_matrix_bytes(type, rows, cols), name);
    owned_.emplace_back(data);
    const int32_t tiles = (rows + kernels::kQuantTileRows - 1) / kernels::kQuantTileRows;
    const size_t tile_bytes = kernels::quant_tile_bytes(type, cols);
    on_every_core(tiles, 16, [&](int64_t begin, int64_t end) {
        const auto first_row = static_cast<int32_t>(begin * kernels::kQuantTileRows);
        const int32_t count = std::min<int32_t>(rows, static_cast<int32_t>(end * kernels::kQuantTileRows)) - first_row;
        kernels::repack_quant(type, gguf_rows + static_cast<size_t>(first_row) * gguf_row_bytes, count, cols,
                              data + static_cast<size_t>(begin) * tile_bytes);
    });
    WeightMatrix w;
    w.data = data;
    w.format = kernels::weight_format(type);
    w.rows = rows;
    w.cols = cols;
    w.stride = cols;
    return w;
}

WeightMatrix Weights::matrix(const std::string& name, int64_t rows, int64_t cols) {
    return matrix(checkpoint_.require(name, {rows, cols}), name, rows, cols);
}

WeightMatrix Weights::float_matrix(const std::string& name, int64_t rows, int64_t cols) {
    const model::TensorView& t = checkpoint_.require(name, {rows, cols});
    if (t.quant) {
        throw model::LoadError(t.file + ": tensor " + (t.stored_name.empty() ? name : t.stored_name) + " is " +
                               t.dtype_text + "; a router must be F32, F16 or BF16");
    }
    return f32_split_matrix(t, rows, cols);
}

WeightMatrix Weights::matrix(const model::TensorView& t, const std::string& name, int64_t rows, int64_t cols) {
    const auto start = std::chrono::steady_clock::now();
    struct Timer {
        std::chrono::steady_clock::time_point start;
        double& total;
        ~Timer() { total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); }
    } timer{start, prepare_ms_};
    std::string dtype = t.quant ? model::quant_type_name(*t.quant) : model::dtype_name(t.dtype);
    std::transform(dtype.begin(), dtype.end(), dtype.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (source_dtype_.find(dtype) == std::string::npos) source_dtype_ += (source_dtype_.empty() ? "" : "+") + dtype;
    if (t.quant) {
        // A GGUF's blocks are already what the kernels read; only the tiles
        // are built (and --quantize leaves them as they are).
        ++repacked_;
        return repacked_matrix(reinterpret_cast<const uint8_t*>(t.data), *t.quant, static_cast<int32_t>(rows),
                               static_cast<int32_t>(cols), name);
    }
    if (options_.quantize) {
        model::QuantType type = *options_.quantize;
        if (cols % model::quant_block_elements(type) != 0 && cols % 32 == 0) {
            type = model::QuantType::q8_0;
            ++fallback_q8_0_;
        }
        report_progress(name);
        if (cols % 32 == 0) return quantized_matrix(t, type, static_cast<int32_t>(rows), static_cast<int32_t>(cols));
        ++fallback_bf16_;
    }
    WeightMatrix w;
    w.rows = static_cast<int32_t>(rows);
    w.cols = static_cast<int32_t>(cols);
    w.stride = kernels::padded_k(w.cols);
    if (t.dtype == model::DType::bf16) {
        const size_t elements = static_cast<size_t>(kernels::tiled_rows(w.rows)) * w.stride;
        auto* tiled = reinterpret_cast<uint16_t*>(aligned_bytes(elements * 2, name));
        owned_.emplace_back(reinterpret_cast<uint8_t*>(tiled));
        // The padding rows of the last tile, then every real row; tiles go
        // to threads (first touch of a copy as large as the checkpoint).
        const size_t first_padding = kernels::tiled_offset(w.rows / kernels::kTileRows * kernels::kTileRows, 0, w.stride);
        std::memset(tiled + first_padding, 0, (elements - first_padding) * 2);
        const auto* source = reinterpret_cast<const uint16_t*>(t.data);
        const int32_t tiles = kernels::tiled_rows(w.rows) / kernels::kTileRows;
        on_every_core(tiles, (1 << 20) / (kernels::kTileRows * w.stride), [&](int64_t begin, int64_t end) {
            const auto first = static_cast<int32_t>(begin) * kernels::kTileRows;
            const int32_t last = std::min(w.rows, static_cast<int32_t>(end) * kernels::kTileRows);
            if (first < last) kernels::tile_bf16_rows(source, w.cols, static_cast<size_t>(cols), w.stride, first, last, tiled);
        });
        w.format = kernels::WeightFormat::bf16_tiled;
        w.data = tiled;
        return w;
    }
    return f32_split_matrix(t, rows, cols);
}

WeightMatrix Weights::f32_split_matrix(const model::TensorView& t, int64_t rows, int64_t cols) {
    WeightMatrix w;
    w.rows = static_cast<int32_t>(rows);
    w.cols = static_cast<int32_t>(cols);
    w.stride = kernels::padded_k(w.cols);
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
    const model::TensorView& t = checkpoint_.require(name, {size});
    if (t.quant)
        throw model::LoadError(t.file + ": tensor " + name + " is " + t.dtype_text + ", expected F32, F16 or BF16");
    auto& values = owned_f32_.emplace_back(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) values[i] = element(t, static_cast<size_t>(i));
    return values.data();
}

const float* Weights::values(const std::string& name, const std::vector<int64_t>& shape, float (*transform)(float)) {
    const model::TensorView& t = checkpoint_.require(name, shape);
    if (t.quant)
        throw model::LoadError(t.file + ": tensor " + name + " is " + t.dtype_text + ", expected F32, F16 or BF16");
    size_t count = 1;
    for (int64_t d : shape) count *= static_cast<size_t>(d);
    auto& out = owned_f32_.emplace_back(count);
    for (size_t i = 0; i < count; ++i) out[i] = transform(element(t, i));
    return out.data();
}

const float* Weights::norm(const std::string& name, int64_t size) {
    // LayerNorm1P stores the scale as an offset from 1 (transformers adds
    // the 1 in every forward; here it is added once).
    if (config_.norm == model::NormKind::layer_norm_1p) return values(name, {size}, [](float w) { return 1.0f + w; });
    return vector(name, size);
}

std::unique_ptr<Weights> Weights::load(const model::ModelConfig& config, model::Checkpoint checkpoint,
                                       const WeightOptions& options) {
    auto w = std::unique_ptr<Weights>(new Weights());
    w->config_ = config;
    w->options_ = options;
    w->load_start_ = w->last_progress_ = std::chrono::steady_clock::now();
    w->checkpoint_ = std::move(checkpoint);
    const model::ModelConfig& c = w->config_;
    const int64_t hidden = c.hidden_size, vocab = c.vocab_size;

    // NemotronH keeps its weights under backbone. (NVIDIA's checkpoints);
    // transformers' own conversions may write model. instead.
    std::string prefix = "model.";
    std::string embed_name = "model.embed_tokens.weight", norm_name = "model.norm";
    if (c.family == model::Family::nemotron_h) {
        prefix = w->checkpoint_.find("backbone.embeddings.weight") || !w->checkpoint_.find("model.embeddings.weight")
                     ? "backbone."
                     : "model.";
        embed_name = prefix + "embeddings.weight";
        norm_name = prefix + "norm_f";
    }
    w->matrices_expected_ = 1;
    for (int32_t i = 0; i < c.num_layers; ++i) {
        switch (c.layer_kind(i)) {
            case model::LayerKind::decoder:
                w->matrices_expected_ += 4 + (c.has_experts(i) ? 3 * c.moe.num_experts : c.mlp == model::MlpKind::relu2 ? 2 : 3);
                break;
            case model::LayerKind::moe:
                w->matrices_expected_ += (c.mlp == model::MlpKind::relu2 ? 2 : 3) * c.moe.num_experts +
                                         (c.moe.shared_expert_intermediate > 0 ? 2 : 0) + (c.moe.latent_size > 0 ? 2 : 0);
                break;
            case model::LayerKind::attention: w->matrices_expected_ += 4; break;
            case model::LayerKind::mamba:
            case model::LayerKind::mlp: w->matrices_expected_ += 2; break;
        }
    }
    w->embed_ = &w->checkpoint_.require(embed_name, {vocab, hidden});
    if (c.family == model::Family::nemotron_h) {
        w->load_nemotron_h_layers(prefix);
    } else {
        w->load_decoder_layers();
    }
    w->final_norm_ = w->norm(norm_name + ".weight", hidden);
    if (c.norm == model::NormKind::layer_norm_1p) w->final_norm_bias_ = w->vector(norm_name + ".bias", hidden);
    // Tied: transformers ties lm_head to the embedding even when a checkpoint
    // also carries an lm_head.weight, so the embedding is what counts.
    w->lm_head_ = w->matrix(c.tie_word_embeddings ? embed_name : "lm_head.weight", vocab, hidden);
    return w;
}

// Attention's q/k/v/o under `p` ("model.layers.3.self_attn." or a NemotronH
// mixer), with the biases and q/k norms the config asks for.
void Weights::load_attention(LayerWeights& l, const std::string& p) {
    const model::ModelConfig& c = config_;
    const int64_t hidden = c.hidden_size, q_dim = int64_t{c.num_heads} * c.head_dim,
                  kv_dim = int64_t{c.num_kv_heads} * c.head_dim;
    l.wq = matrix(p + "q_proj.weight", q_dim, hidden);
    l.wk = matrix(p + "k_proj.weight", kv_dim, hidden);
    l.wv = matrix(p + "v_proj.weight", kv_dim, hidden);
    l.wo = matrix(p + "o_proj.weight", hidden, q_dim);
    if (c.qkv_bias) {
        l.q_bias = vector(p + "q_proj.bias", q_dim);
        l.k_bias = vector(p + "k_proj.bias", kv_dim);
        l.v_bias = vector(p + "v_proj.bias", kv_dim);
    }
    if (c.o_bias) l.o_bias = vector(p + "o_proj.bias", hidden);
    if (c.qk_norm) {
        l.q_norm = vector(p + "q_norm.weight", c.head_dim);
        l.k_norm = vector(p + "k_norm.weight", c.head_dim);
    }
}

// The MLP under `p`: gate (SwiGLU only), up and down, with mlp_bias's biases.
void Weights::load_mlp(LayerWeights& l, const std::string& p) {
    const model::ModelConfig& c = config_;
    const int64_t hidden = c.hidden_size, inter = c.intermediate_size;
    if (c.mlp == model::MlpKind::silu_gated) l.w_gate = matrix(p + "gate_proj.weight", inter, hidden);
    l.w_up = matrix(p + "up_proj.weight", inter, hidden);
    l.w_down = matrix(p + "down_proj.weight", hidden, inter);
    if (c.mlp_bias) {
        l.up_bias = vector(p + "up_proj.bias", inter);
        l.down_bias = vector(p + "down_proj.bias", hidden);
    }
}

void Weights::load_experts(LayerWeights& l, const std::string& p) {
    const model::ModelConfig& c = config_;
    const model::MoeConfig& moe = c.moe;
    const int64_t hidden = c.hidden_size, inter = moe.expert_intermediate, count = moe.num_experts;
    const int64_t width = moe.latent_size > 0 ? moe.latent_size : hidden;  // what the routed experts read and write
    const bool gated = c.mlp == model::MlpKind::silu_gated;
    l.router = float_matrix(p + "gate.weight", count, hidden);
    if (moe.router == model::RouterKind::sigmoid) l.router_bias = vector(p + "gate.e_score_correction_bias", count);
    if (moe.latent_size > 0) {
        l.latent_down = matrix(p + "fc1_latent_proj.weight", width, hidden);
        l.latent_up = matrix(p + "fc2_latent_proj.weight", hidden, width);
    }
    if (moe.shared_expert_intermediate > 0) {
        const int64_t shared = moe.shared_expert_intermediate;
        l.shared_expert.w_up = matrix(p + "shared_experts.up_proj.weight", shared, hidden);
        l.shared_expert.w_down = matrix(p + "shared_experts.down_proj.weight", hidden, shared);
    }
    l.experts.resize(static_cast<size_t>(count));
    // transformers 5 saves each projection of all experts as one 3-D tensor
    // (a SwiGLU's gate and up stacked in gate_up_proj); earlier checkpoints
    // and GGUF files (model/gguf_model.cpp splits them) have one per expert.
    const std::string first_fused = p + (gated ? "experts.gate_up_proj" : "experts.up_proj");
    if (checkpoint_.find(first_fused) != nullptr || checkpoint_.find(p + "experts.down_proj") != nullptr) {
        const model::TensorView& in = checkpoint_.require(first_fused, {count, (gated ? 2 : 1) * inter, width});
        const model::TensorView& out = checkpoint_.require(p + "experts.down_proj", {count, width, inter});
        for (const model::TensorView* t : {&in, &out}) {
            if (model::dtype_bytes(t->dtype) == 0) {
                throw model::LoadError(t->file + ": tensor " + t->name + " is " + t->dtype_text +
                                       "; stacked experts must be F32, F16 or BF16");
            }
        }
        // Expert e's rows of a 3-D tensor: a view `first_row` rows into its block.
        auto slice = [](const model::TensorView& t, int64_t e, int64_t first_row, int64_t rows, int64_t cols) {
            model::TensorView v = t;
            const size_t element = model::dtype_bytes(t.dtype);
            const size_t per_expert = static_cast<size_t>(t.shape[1] * t.shape[2]) * element;
            v.data = t.data + static_cast<size_t>(e) * per_expert + static_cast<size_t>(first_row * cols) * element;
            v.bytes = static_cast<size_t>(rows * cols) * element;
            v.shape = {rows, cols};
            return v;
        };
        for (int64_t e = 0; e < count; ++e) {
            ExpertWeights& x = l.experts[static_cast<size_t>(e)];
            const std::string name = p + "experts[" + std::to_string(e) + "]";
            if (gated) x.w_gate = matrix(slice(in, e, 0, inter, width), name + ".gate", inter, width);
            x.w_up = matrix(slice(in, e, gated ? inter : 0, inter, width), name + ".up", inter, width);
            x.w_down = matrix(slice(out, e, 0, width, inter), name + ".down", width, inter);
        }
        return;
    }
    for (int64_t e = 0; e < count; ++e) {
        ExpertWeights& x = l.experts[static_cast<size_t>(e)];
        const std::string q = p + "experts." + std::to_string(e) + ".";
        if (gated) x.w_gate = matrix(q + "gate_proj.weight", inter, width);
        x.w_up = matrix(q + "up_proj.weight", inter, width);
        x.w_down = matrix(q + "down_proj.weight", width, inter);
    }
}

void Weights::load_decoder_layers() {
    const model::ModelConfig& c = config_;
    const int64_t hidden = c.hidden_size;
    const bool layer_norm = c.norm == model::NormKind::layer_norm_1p;
    for (int32_t i = 0; i < c.num_layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        LayerWeights l;
        l.attn_norm = norm(p + "input_layernorm.weight", hidden);
        if (layer_norm) l.attn_norm_bias = vector(p + "input_layernorm.bias", hidden);
        load_attention(l, p + "self_attn.");
        l.mlp_norm = norm(p + "post_attention_layernorm.weight", hidden);
        if (layer_norm) l.mlp_norm_bias = vector(p + "post_attention_layernorm.bias", hidden);
        if (c.has_experts(i)) {
            load_experts(l, p + "mlp.");
        } else {
            load_mlp(l, p + "mlp.");
        }
        layers_.push_back(std::move(l));
    }
}

void Weights::load_nemotron_h_layers(const std::string& prefix) {
    const model::ModelConfig& c = config_;
    const model::MambaConfig& m = c.mamba;
    const int64_t hidden = c.hidden_size;
    for (int32_t i = 0; i < c.num_layers; ++i) {
        const std::string p = prefix + "layers." + std::to_string(i) + ".";
        const std::string mixer = p + "mixer.";
        LayerWeights l;
        l.kind = c.layer_kind(i);
        const float* layer_norm = vector(p + "norm.weight", hidden);
        switch (l.kind) {
            case model::LayerKind::attention:
                l.attn_norm = layer_norm;
                load_attention(l, mixer);
                break;
            case model::LayerKind::mlp:
                l.mlp_norm = layer_norm;
                load_mlp(l, mixer);
                break;
            case model::LayerKind::mamba:
                l.attn_norm = layer_norm;
                l.in_proj = matrix(mixer + "in_proj.weight", m.in_proj_rows(), hidden);
                l.out_proj = matrix(mixer + "out_proj.weight", hidden, m.inner());
                if (m.proj_bias) {
                    l.in_proj_bias = vector(mixer + "in_proj.bias", m.in_proj_rows());
                    l.out_proj_bias = vector(mixer + "out_proj.bias", hidden);
                }
                l.conv_weight =
                    values(mixer + "conv1d.weight", {m.conv_dim(), 1, m.conv_kernel}, [](float v) { return v; });
                if (m.conv_bias) l.conv_bias = vector(mixer + "conv1d.bias", m.conv_dim());
                l.dt_bias = vector(mixer + "dt_bias", m.num_heads);
                l.A = values(mixer + "A_log", {m.num_heads}, [](float a) { return -std::exp(a); });
                l.D = vector(mixer + "D", m.num_heads);
                l.gated_norm = vector(mixer + "norm.weight", m.inner());
                break;
            case model::LayerKind::moe:
                l.mlp_norm = layer_norm;
                load_experts(l, mixer);
                break;
            case model::LayerKind::decoder: break;
        }
        layers_.push_back(std::move(l));
    }
}

void Weights::embed(int32_t token, float* out) const {
    const size_t hidden = static_cast<size_t>(config_.hidden_size);
    if (embed_->quant) {
        const size_t row_bytes = model::quant_row_bytes(*embed_->quant, config_.hidden_size);
        model::dequantize_row(*embed_->quant, embed_->data + static_cast<size_t>(token) * row_bytes,
                              config_.hidden_size, out);
        return;
    }
    for (size_t i = 0; i < hidden; ++i) out[i] = element(*embed_, static_cast<size_t>(token) * hidden + i);
}

size_t Weights::matmul_bytes() const { return matrix_bytes(false); }

size_t Weights::active_matmul_bytes() const { return matrix_bytes(true); }

size_t Weights::matrix_bytes(bool active_only) const {
    auto bytes = [](const WeightMatrix& m) {
        if (kernels::is_quantized(m.format))
            return kernels::quant_kernel_matrix_bytes(kernels::quant_type(m.format), m.rows, m.cols);
        switch (m.format) {
            case kernels::WeightFormat::bf16: return static_cast<size_t>(m.rows) * m.stride * 2;
            case kernels::WeightFormat::bf16_tiled: return static_cast<size_t>(kernels::tiled_rows(m.rows)) * m.stride * 2;
            default: return static_cast<size_t>(m.rows) * m.stride * 4;  // f32_split
        }
    };
    size_t total = 0;
    for (const WeightMatrix* m : matrices(active_only)) total += bytes(*m);
    return total;
}

std::vector<const WeightMatrix*> Weights::matrices(bool active_experts_only) const {
    std::vector<const WeightMatrix*> all{&lm_head_};
    for (const LayerWeights& l : layers_) {
        for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.in_proj, &l.out_proj,
                                      &l.router, &l.latent_down, &l.latent_up, &l.shared_expert.w_up,
                                      &l.shared_expert.w_down}) {
            if (m->rows > 0) all.push_back(m);
        }
        // A token reads experts_per_token experts; they are alike in size,
        // so the first ones stand for whichever it picks.
        const size_t experts = active_experts_only ? std::min<size_t>(l.experts.size(), config_.moe.experts_per_token)
                                                   : l.experts.size();
        for (size_t e = 0; e < experts; ++e) {
            for (const WeightMatrix* m : {&l.experts[e].w_gate, &l.experts[e].w_up, &l.experts[e].w_down}) {
                if (m->rows > 0) all.push_back(m);
            }
        }
    }
    return all;
}

std::string Weights::summary() const {
    char text[320];
    const double mib = static_cast<double>(matmul_bytes()) / (1 << 20);
    // A mixture holds every expert in memory and reads k of them a token.
    std::string experts;
    if (config_.moe.enabled()) {
        std::snprintf(text, sizeof text, "; %d experts, %d a token: %.0f MiB read a token", config_.moe.num_experts,
                      config_.moe.experts_per_token, static_cast<double>(active_matmul_bytes()) / (1 << 20));
        experts = text;
    }
    if (!options_.quantize || repacked_ == matrices_expected_) {
        // "repacked": a GGUF's blocks, only rearranged into the kernels' tiles.
        const char* how = repacked_ > 0 ? "repacked" : source_dtype_ == "bf16" ? "tiled" : "converted";
        std::snprintf(text, sizeof text, "%s weights %.0f MiB (%s in %.0f ms", source_dtype_.c_str(), mib, how,
                      prepare_ms_);
        return text + experts + ")";
    }
    const char* type = model::quant_type_name(*options_.quantize);
    std::snprintf(text, sizeof text, "%s weights %.0f MiB (quantized from %s in %.1f s", type, mib, source_dtype_.c_str(),
                  prepare_ms_ / 1e3);
    std::string out = text;
    auto matrices = [](int32_t n) { return "; " + std::to_string(n) + (n == 1 ? " matrix" : " matrices"); };
    if (fallback_q8_0_ > 0) {
        out += matrices(fallback_q8_0_) + " q8_0: rows not a multiple of " +
               std::to_string(model::quant_block_elements(*options_.quantize));
    }
    if (fallback_bf16_ > 0) out += matrices(fallback_bf16_) + " unquantized: rows not a multiple of 32";
    if (repacked_ > 0) out += matrices(repacked_) + " kept in the file's own quantized types";
    return out + experts + ")";
}

}  // namespace tf::cpu
