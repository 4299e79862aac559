// How activation rows are laid out for the matmul (kernels/isa.h,
// PackRowsFn): the pair-split fp32 layout of f32 activations and the bf16
// rounding of bf16 activations. Plain integer and copy operations, the same
// on every SIMD path.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tf::cpu::kernels {

inline int32_t padded_k(int32_t k) { return (k + 31) / 32 * 32; }

// The bf16_tiled weight layout. A decode step reads every weight once; read
// row by row, eight rows side by side, that is eight streams per thread,
// which on the CPUs we measured gets about half the bandwidth of one
// stream. So rows are grouped in tiles of kTileRows, and a tile stores, for
// each 32-wide block of K in turn, its rows' 32 values one after the other
// (kTileRows x 64 bytes): the kernel's eight columns of one K step are then
// consecutive, and a thread that owns whole tiles reads one sequential
// stream. Only the addresses change, not the order of any sum: the same
// bits as the natural layout.
constexpr int32_t kTileRows = 8;

inline int32_t tiled_rows(int32_t rows) { return (rows + kTileRows - 1) / kTileRows * kTileRows; }

// Offset of W[n][k] (k < stride) in a tiled matrix with `stride` per row.
inline size_t tiled_offset(int32_t n, int32_t k, int32_t stride) {
    const size_t tile = static_cast<size_t>(n / kTileRows) * kTileRows * stride;
    return tile + static_cast<size_t>(k / 32) * (kTileRows * 32) + static_cast<size_t>(n % kTileRows) * 32 + k % 32;
}

// Rows [row_begin, row_end) of a row-major bf16 matrix (`cols` values,
// `source_stride` apart) into the tiled layout of `stride` (padded_k(cols)).
// `tiled` holds tiled_rows(rows) * stride elements; callers zero what no
// row fills (padding columns and rows) or let disjoint calls cover it.
inline void tile_bf16_rows(const uint16_t* source, int32_t cols, size_t source_stride, int32_t stride,
                           int32_t row_begin, int32_t row_end, uint16_t* tiled) {
    for (int32_t n = row_begin; n < row_end; ++n) {
        const uint16_t* row = source + static_cast<size_t>(n) * source_stride;
        for (int32_t k = 0; k < stride; k += 32) {
            uint16_t* out = tiled + tiled_offset(n, k, stride);
            const int32_t take = cols - k >= 32 ? 32 : (cols > k ? cols - k : 0);
            std::memcpy(out, row + k, static_cast<size_t>(take) * 2);
            std::memset(out + take, 0, static_cast<size_t>(32 - take) * 2);
        }
    }
}

// One activation row in the kernels' pair-split layout: each 32-wide block
// of x holds its 16 even elements, then its 16 odd ones, matching what one
// bf16 load splits into (load_bf16_pairs). Elements past k are zero.
inline void split_pairs(const float* x, int32_t k, float* xs) {
    const int32_t kp = padded_k(k);
    for (int32_t block = 0; block < kp; block += 32) {
        for (int32_t l = 0; l < 16; ++l) {
            const int32_t even = block + 2 * l, odd = even + 1;
            xs[block + l] = even < k ? x[even] : 0.0f;
            xs[block + 16 + l] = odd < k ? x[odd] : 0.0f;
        }
    }
}

// fp32 -> bf16 as VCVTNEPS2BF16 rounds: to nearest even, subnormals to a
// zero of their sign, NaN kept quiet. Weights never pass through here (a
// checkpoint's subnormal bf16 weights are flushed by the dot product itself).
inline uint16_t activation_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    if ((bits & 0x7F800000u) == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

inline void pack_rows_f32(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed) {
    float* out = static_cast<float*>(packed);
    const int32_t kp = padded_k(k);
    for (int32_t r = 0; r < rows; ++r) split_pairs(x + static_cast<size_t>(r) * ldx, k, out + static_cast<size_t>(r) * kp);
}

inline void pack_rows_bf16(const float* x, int32_t rows, int32_t k, int32_t ldx, void* packed) {
    uint16_t* out = static_cast<uint16_t*>(packed);
    const int32_t kp = padded_k(k);
    for (int32_t r = 0; r < rows; ++r) {
        const float* row = x + static_cast<size_t>(r) * ldx;
        uint16_t* o = out + static_cast<size_t>(r) * kp;
        for (int32_t i = 0; i < k; ++i) o[i] = activation_to_bf16(row[i]);
        for (int32_t i = k; i < kp; ++i) o[i] = 0;
    }
}

}  // namespace tf::cpu::kernels
