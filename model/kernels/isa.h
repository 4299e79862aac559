// Which SIMD path the kernels run, and the table of kernel entry points for
// it. The three paths (scalar, AVX2+FMA, AVX-512) are compiled from one
// source (kernels_impl.inc) over a 16-lane vector type, so every reduction
// has the same lane layout and the same final tree in all three: their
// results are bit-identical by construction, and tests force each path and
// compare them with memcmp. The path is chosen once, at start-up.
#pragma once

#include <cstdint>
#include <string>

namespace tf::model::kernels {

enum class Isa { scalar, avx2, avx512 };

const char* isa_name(Isa isa);
// The widest path this CPU runs: avx512 (F+BW+VL+DQ), else avx2 (with FMA and
// F16C), else scalar.
Isa best_isa();
bool isa_supported(Isa isa);
// "auto", "avx512", "avx2" or "scalar" (e.g. TF_ISA); throws on other text
// and on a path this CPU cannot run.
Isa parse_isa(const std::string& text);

enum class WeightFormat {
    bf16,       // natural row-major bf16 (as stored in the checkpoint)
    f32_split,  // fp32, each 32-column block stored as its 16 even columns then its 16 odd columns
};

// A weight matrix W of `rows` output features by `cols` inputs, row-major
// with `stride` elements per row (a multiple of 32; columns past `cols` are 0).
struct WeightMatrix {
    const void* data = nullptr;
    WeightFormat format = WeightFormat::bf16;
    int32_t rows = 0;
    int32_t cols = 0;
    int32_t stride = 0;
};

// out[m * ldo + n] = sum_k x[m][k] * W[n][k] for rows m < M and columns
// n in [n_begin, n_end). `xs` holds M rows of `stride` floats in pair-split
// layout (see split_pairs in matmul.h). Each output element is one serial
// reduction whose order depends only on `cols`.
using MatmulFn = void (*)(const float* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end,
                          float* out, int32_t ldo);

// One (row, head) of causal attention: softmax(q . k_j * scale) over keys
// j in [first, last], then the weighted sum of v_j. `keys`/`values` hold
// head_dim floats per position; `scores` has room for last + 1 floats.
using AttentionHeadFn = void (*)(const float* q, const float* keys, const float* values, int32_t first,
                                 int32_t last, int32_t head_dim, float scale, float* scores, float* out);

struct KernelTable {
    Isa isa = Isa::scalar;
    MatmulFn matmul = nullptr;
    AttentionHeadFn attention_head = nullptr;
};

const KernelTable& kernel_table(Isa isa);

}  // namespace tf::model::kernels
