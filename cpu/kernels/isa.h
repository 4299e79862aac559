// Which SIMD path the kernels run, and the table of kernel entry points for
// it. Every path is compiled from one source (kernels_impl.inc) over a
// 16-lane vector type, so every reduction has the same lane layout and the
// same final tree: for a given activation precision their results are
// bit-identical by construction, and tests force each path and compare them
// with memcmp. The path is chosen once, at start-up.
//
// Activation precision. With fp32 activations (the default where the CPU has
// no bf16 dot product) every multiply-add is an fp32 FMA on the bf16 weight
// widened to fp32. With bf16 activations each matmul input is rounded to
// bf16 first and every lane takes the exact product of two bf16 values, in
// the order and with the flushing of VDPBF16PS: the avx512-bf16 path runs
// that instruction, and scalar, avx2 and avx512 emulate it bit for bit, so
// a machine without it can still check (and reproduce) what one with it
// computes. See docs/design.md, "Numerics".
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cpu/kernels/kv_format.h"
#include "cpu/kernels/packing.h"

namespace tf::cpu::kernels {

enum class Isa { scalar, avx2, avx512, avx512_bf16 };
enum class Activations { f32, bf16 };

// "scalar", "avx2", "avx512", "avx512-bf16".
const char* isa_name(Isa isa);
const char* activations_name(Activations activations);
// The path auto picks: avx512-bf16 when CPUID advertises AVX512_BF16, else
// avx512 (F+BW+VL+DQ), else avx2 (with FMA and F16C), else scalar.
Isa best_isa();
// Whether this process can run the path. avx512-bf16 also counts when CPUID
// hides AVX512_BF16 but the instruction runs (some hypervisors mask the bit
// on CPUs that have it): a one-off probe executes it under a SIGILL guard.
// auto never picks a path CPUID hides; forcing it is allowed.
bool isa_supported(Isa isa);
// "auto", "avx512-bf16", "avx512", "avx2" or "scalar" (e.g. TF_ISA); throws
// on other text and on a path this CPU cannot run.
Isa parse_isa(const std::string& text);

// bf16 on the paths built around a bf16 dot product, fp32 elsewhere.
Activations default_activations(Isa isa);
// "auto", "f32" or "bf16" (e.g. TF_ACTIVATIONS) for `isa`; throws on other
// text and on f32 for a bf16-only path.
Activations parse_activations(const std::string& text, Isa isa);

enum class WeightFormat {
    bf16,        // natural row-major bf16 (as stored in the checkpoint)
    bf16_tiled,  // bf16 in tiles of kTileRows rows, in the order the kernel reads them (packing.h)
    f32_split,   // fp32, each 32-column block stored as its 16 even columns then its 16 odd columns
    // Quantized (kernels/quant_matmul.h, which has their own kernels and
    // int8 activations): stride == cols, cols a multiple of the block;
    // all four in tiles of 16 interleaved rows (repack_quant in
    // quant_layout.h).
    q8_0,
    q4_0,
    q4_k,
    q6_k,
    q5_k,
    q5_0,
};

// A weight matrix W of `rows` output features by `cols` inputs with `stride`
// elements per row (a multiple of 32; columns past `cols` are 0): row-major,
// or for bf16_tiled, tiles of kTileRows rows (rows rounded up, zero-filled).
struct WeightMatrix {
    const void* data = nullptr;
    WeightFormat format = WeightFormat::bf16;
    int32_t rows = 0;
    int32_t cols = 0;
    int32_t stride = 0;
};

// Activation rows as the matmul reads them, `row_bytes(k)` bytes per row:
// fp32 in pair-split layout (see split_pairs in matmul.h) for f32
// activations, bf16 in natural order for bf16 activations; zero past k.
// pack_rows turns `rows` fp32 rows of `k` values (`ldx` apart) into that.
using PackRowsFn = void (*)(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed);

// out[m * ldo + n] = sum_k x[m][k] * W[n][k] for rows m < M and columns
// n in [n_begin, n_end). `xs` holds M packed rows of w.stride elements.
// Each output element is one serial reduction whose order depends only on
// `cols`.
using MatmulFn = void (*)(const void* xs, int32_t M, const WeightMatrix& w, int32_t n_begin, int32_t n_end, float* out,
                          int32_t ldo);

// One query vector of an attention call: one query head of one row.
struct AttentionQuery {
    const float* q;  // head_dim floats
    float* out;      // head_dim floats
    int32_t last;    // the row's position: it attends to keys first..last
};
// The most query vectors one attention call takes.
constexpr int32_t kAttentionMaxQueries = 32;
// Keys go through attention in blocks of this many positions, aligned to
// absolute positions; each block is a softmax of its own, folded into the
// running result in block order (attention_impl.inc). Part of the
// numerics: every row of every model blocks its keys the same way.
constexpr int32_t kAttentionBlock = 256;
// One vector's attention state: o (head_dim floats), then m and l, padded
// so that consecutive states keep o 64-byte aligned.
inline size_t attention_state_floats(int32_t head_dim) { return static_cast<size_t>(head_dim) + 16; }
// A call's scratch: one block of keys and values widened to fp32, so that a
// narrow cache's elements are converted once per block, not once per group
// of vectors.
inline size_t attention_scratch_floats(int32_t head_dim) {
    return 2 * static_cast<size_t>(kAttentionBlock) * static_cast<size_t>(head_dim);
}

// Causal attention for `count` (1..kAttentionMaxQueries) query vectors of
// one kv head, each over keys j in [first, its last]: softmax(q . k_j *
// scale), then the weighted sum of v_j. `keys` are in the KV cache's
// blocked layout and `values` one row of head_dim elements per position
// (cpu/kv_cache.h), both of the KvType the kernel was chosen for. The
// vectors may be heads of several rows of one stream: they read the keys
// and values together, and a vector gets the same bits whichever others
// share its call (attention_impl.inc).
//
// The call covers key blocks [block_begin, block_end) of kAttentionBlock
// positions. Without `per_block` it folds them into the vectors' states
// (vector v's at states + v * attention_state_floats(head_dim); start
// them with reset_attention_state, finish with AttentionFinishFn). With
// it, block b's own state for vector v goes to
// states + ((b - block_begin) * count + v) * attention_state_floats(head_dim),
// to be folded later, in block order, by AttentionMergeFn. `scratch`
// holds attention_scratch_floats(head_dim) floats.
using AttentionFn = void (*)(const AttentionQuery* queries, int32_t count, const void* keys, const void* values,
                             int32_t first, int32_t head_dim, float scale, int32_t block_begin, int32_t block_end,
                             float* states, bool per_block, float* scratch);
// Folds one block's state (from a per_block call) into `state`.
using AttentionMergeFn = void (*)(const float* block, float* state, int32_t head_dim);
// out = o / l of a finished state.
using AttentionFinishFn = void (*)(const float* state, int32_t head_dim, float* out);

// The empty state: m = -inf, l = 0, o = 0.
inline void reset_attention_state(float* state, int32_t head_dim) {
    for (int32_t d = 0; d < head_dim; ++d) state[d] = 0.0f;
    state[head_dim] = -INFINITY;
    state[head_dim + 1] = 0.0f;
}

// out[i] = e^x[i] as the attention computes it, n a multiple of 16, out
// may be x (the SiLU of the MLP runs on it too).
using Exp16Fn = void (*)(const float* x, size_t n, float* out);

// One row of a Mamba2 state: s := s_in * decay + dtx * B over state_size
// entries (a multiple of 16; s may be s_in), returning s . C
// (mamba_scan_impl.inc).
using ScanStateRowFn = float (*)(const float* s_in, float* s, float decay, float dtx, const float* B, const float* C,
                                 int32_t state_size);

struct KernelTable {
    Isa isa = Isa::scalar;
    Activations activations = Activations::f32;
    PackRowsFn pack_rows = nullptr;
    MatmulFn matmul = nullptr;
    AttentionFn attention_kernels[kKvTypes] = {};  // by KvType
    AttentionMergeFn attention_merge = nullptr;
    AttentionFinishFn attention_finish = nullptr;
    Exp16Fn exp16_values = nullptr;
    ScanStateRowFn scan_state_row = nullptr;

    AttentionFn attention(KvType kv) const { return attention_kernels[static_cast<int>(kv)]; }

    // Bytes of one packed activation row of k inputs.
    size_t row_bytes(int32_t k) const {
        return static_cast<size_t>(padded_k(k)) * (activations == Activations::f32 ? 4 : 2);
    }
};

// The table for `isa` with `activations` (default_activations(isa) when
// absent); throws std::invalid_argument for f32 on a bf16-only path.
const KernelTable& kernel_table(Isa isa);
const KernelTable& kernel_table(Isa isa, Activations activations);

}  // namespace tf::cpu::kernels
