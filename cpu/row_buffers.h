// Row-major scratch buffers of the CPU backend (cpu_backend.cpp and
// cpu_backend_mamba.cpp): `rows` rows of `width` floats, grown on demand
// and kept between forwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tf::cpu::rows {

inline float* row_of(std::vector<float>& buffer, int64_t row, int32_t width) {
    return buffer.data() + static_cast<size_t>(row) * width;
}

inline void grow(std::vector<float>& buffer, int64_t rows, int32_t width) {
    const size_t need = static_cast<size_t>(rows) * width;
    if (buffer.size() < need) buffer.resize(need);
}

// x[r] += bias for each of `rows` rows; nothing when bias is null.
inline void add_bias(float* x, const float* bias, int64_t rows, int32_t width) {
    if (!bias) return;
    for (int64_t r = 0; r < rows; ++r)
        for (int32_t i = 0; i < width; ++i) x[static_cast<size_t>(r) * width + i] += bias[i];
}

}  // namespace tf::cpu::rows
