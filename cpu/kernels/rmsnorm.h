// RMSNorm (HF LlamaRMSNorm): y = w * (x / sqrt(mean(x^2) + eps)), in fp32.
// Per row, serial: a row's result never depends on the other rows.
#pragma once

#include <cassert>
#include <cmath>
#include <cstdint>

namespace tf::cpu::kernels {

// kernels

inline void rmsnorm_row(const float* x, const float* w, int32_t dim, float eps, float* out) {
    float sum = 0.0f;
    for (int32_t i = 0; i < dim; ++i) sum += x[i] * x[i];  // serial, in index order
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    for (int32_t i = 0; i < dim; ++i) out[i] = w[i] * (x[i] * inv);
}

// The reference, in double.
inline void rmsnorm_reference(const float* x, const float* w, int32_t dim, float eps, double* out) {
    double sum = 0.0;
    for (int32_t i = 0; i < dim; ++i) sum += static_cast<double>(x[i]) * x[i];
    const double inv = 1.0 / std::sqrt(sum / dim + eps);
    for (int32_t i = 0; i < dim; ++i) out[i] = w[i] * (x[i] * inv);
}

// launchers

// `rows` rows of `dim` floats, `stride` apart (in and out alike).
inline void rmsnorm(const float* x, const float* w, int32_t rows, int32_t dim, int32_t stride, float eps, float* out) {
    assert(dim > 0 && stride >= dim);
    for (int32_t r = 0; r < rows; ++r) rmsnorm_row(x + static_cast<size_t>(r) * stride, w, dim, eps, out + static_cast<size_t>(r) * stride);
}

// LayerNorm with bias (Nemotron's LayerNorm1P, with w already 1 + the
// stored weight): the mean, then the variance around it, both serial sums
// in index order, as rmsnorm_row.
inline void layernorm_row(const float* x, const float* w, const float* b, int32_t dim, float eps, float* out) {
    float sum = 0.0f;
    for (int32_t i = 0; i < dim; ++i) sum += x[i];
    const float mean = sum / static_cast<float>(dim);
    float squares = 0.0f;
    for (int32_t i = 0; i < dim; ++i) squares += (x[i] - mean) * (x[i] - mean);
    const float inv = 1.0f / std::sqrt(squares / static_cast<float>(dim) + eps);
    for (int32_t i = 0; i < dim; ++i) out[i] = (x[i] - mean) * inv * w[i] + b[i];
}

}  // namespace tf::cpu::kernels
