// The launchers of the CUDA backend's kernels, callable from host C++ (the
// backend, bench-gpu). Each is defined in its layer's header under
// gpu/kernels/ (a "kernels" section, then a "launchers" section), all
// compiled in gpu/kernels.cu. Every launcher checks its shape assumptions
// (TF_GPU_REQUIRE) and the launch (TF_CUDA_CHECK_LAUNCH), and runs on the
// given stream without synchronising, so a sequence of launches can be
// captured into a CUDA graph.
//
// Batch invariance: a launcher's grid may depend on how many rows there
// are, never what a row computes. Each row's reductions have one order fixed
// by the model's shapes and the row's own position.
//
// Types: bf16 values travel as their 16 bits (uint16_t) on the host side.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/kernels/kv_addressing.h"
#include "gpu/row_inputs.h"

namespace tf::gpu::kernels {

using bf16_bits = uint16_t;

// Largest head_dim the attention and RoPE kernels take.
constexpr int32_t kMaxHeadDim = 256;

// x[r] = the embedding row of rows[r].token, as fp32 (zeros for padding rows).
void embed(const bf16_bits* table, int32_t hidden, const DeviceRow* rows, int32_t count, float* x, cudaStream_t stream);

// out[o] = bf16(RMSNorm(x[row]) * weight), row = row_index ? row_index[o] : o.
void rmsnorm(const float* x, int32_t ldx, const float* weight, int32_t dim, float eps, const int32_t* row_index,
             int32_t count, bf16_bits* out, int32_t ldo, cudaStream_t stream);

// y[m, n] (=|+=) sum_k a[m, k] * w[n, k] (+ bias[n]) for m < m_rows, n < n_cols:
// bf16 inputs, fp32 accumulation on tensor cores, fp32 out. One tile shape
// and one sequential k loop for every m_rows. With `accumulate`, y += (sum + bias).
struct Gemm {
    const bf16_bits* a = nullptr;
    int32_t lda = 0;
    const bf16_bits* w = nullptr;
    int32_t ldw = 0;
    const float* bias = nullptr;
    float* y = nullptr;
    int32_t ldy = 0;
    int32_t m_rows = 0;
    int32_t n_cols = 0;
    int32_t k = 0;
    bool accumulate = false;
};
void gemm(const Gemm& g, cudaStream_t stream);

// Per row of qkv ([q heads | k heads | v heads], fp32): optional RMSNorm of
// each q and k head (q_norm / k_norm, Qwen3), RoPE (rotate_half) of q and k
// at the row's position, q written back in place, k and v stored as bf16 in
// this layer's pools at the row's slot. Padding rows are skipped.
void qk_rope_kv(float* qkv, int32_t ld_qkv, const float* q_norm, const float* k_norm, float eps,
                const float* inv_freq, const DeviceRow* rows, int32_t count, const int32_t* tables,
                const KvShape& shape, bf16_bits* layer_keys, bf16_bits* layer_values, cudaStream_t stream);

// Attention of each row's q heads over its stream's keys [first, position]
// in this layer: kAttentionSplit keys per split (one (max, sum, acc) each,
// in `partial_ml` / `partial_acc`), then the splits combined in order into
// out (bf16, [row][head * head_dim]). `workers` thread blocks per (row,
// head) share a row's splits; it changes no result.
void attention(const float* qkv, int32_t ld_qkv, const bf16_bits* layer_keys, const bf16_bits* layer_values,
               const DeviceRow* rows, int32_t count, const int32_t* tables, const KvShape& shape, int32_t workers,
               float* partial_ml, float* partial_acc, bf16_bits* out, int32_t ldo, cudaStream_t stream);

// out[r, i] = bf16(silu(gate) * up) with gate_up[r] = [gate (inter) | up (inter)].
void swiglu(const float* gate_up, int32_t inter, int32_t count, bf16_bits* out, cudaStream_t stream);

// tokens[o] = the token model::sample() picks from logits[o] with samplers[o]
// (active rows only; others are left as they are). Scratch: kSamplerBlocks *
// vocab keys and weights.
void sample(const float* logits, int32_t vocab, const DeviceSampler* samplers, int32_t count,
            unsigned long long* key_scratch, double* weight_scratch, int32_t* tokens, cudaStream_t stream);

// For each (source, target) pair (2 * count ints), copies the source block's
// keys and values of every layer to the target block.
void copy_kv_blocks(const int32_t* pairs, int32_t count, int32_t layers, const KvShape& shape, bf16_bits* keys,
                    bf16_bits* values, cudaStream_t stream);

}  // namespace tf::gpu::kernels
