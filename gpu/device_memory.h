// Owners of device and pinned host memory, and the upload of checkpoint
// tensors into one device allocation through two pinned staging buffers
// (bf16 or fp32 on the device; other dtypes converted on the way). Host code
// of the CUDA backend, included by gpu/cuda_backend.cpp only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "gpu/check.h"
#include "gpu/forward_plan.h"
#include "model/load_error.h"
#include "model/safetensors.h"

namespace tf::gpu {

constexpr size_t kStagingBytes = size_t{32} << 20;  // each of the two pinned upload buffers

// Device memory, freed with the object.
class DeviceMemory {
public:
    DeviceMemory() = default;
    explicit DeviceMemory(size_t bytes) : bytes_(bytes) {
        if (bytes) TF_CUDA_CHECK(cudaMalloc(&data_, bytes));
    }
    ~DeviceMemory() {
        if (data_) cudaFree(data_);
    }
    DeviceMemory(DeviceMemory&& other) noexcept : data_(std::exchange(other.data_, nullptr)), bytes_(other.bytes_) {}
    DeviceMemory& operator=(DeviceMemory&& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(bytes_, other.bytes_);
        return *this;
    }
    template <typename T = void>
    T* get(size_t byte_offset = 0) const {
        return reinterpret_cast<T*>(static_cast<char*>(data_) + byte_offset);
    }
    size_t bytes() const { return bytes_; }

private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
};

// Page-locked host memory (fast, truly asynchronous copies).
class PinnedMemory {
public:
    PinnedMemory() = default;
    explicit PinnedMemory(size_t bytes) {
        if (bytes) TF_CUDA_CHECK(cudaMallocHost(&data_, bytes));
    }
    ~PinnedMemory() {
        if (data_) cudaFreeHost(data_);
    }
    PinnedMemory(PinnedMemory&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
    PinnedMemory& operator=(PinnedMemory&& other) noexcept {
        std::swap(data_, other.data_);
        return *this;
    }
    template <typename T = void>
    T* get(size_t byte_offset = 0) const {
        return reinterpret_cast<T*>(static_cast<char*>(data_) + byte_offset);
    }

private:
    void* data_ = nullptr;
};

// fp32 -> bf16, rounding to nearest even; NaN stays a (quiet) NaN.
inline uint16_t float_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

inline float element(const model::TensorView& t, size_t i) {
    switch (t.dtype) {
        case model::DType::f32: {
            float value;
            std::memcpy(&value, t.data + 4 * i, 4);
            return value;
        }
        case model::DType::bf16: {
            uint16_t bits;
            std::memcpy(&bits, t.data + 2 * i, 2);
            return model::bf16_to_float(bits);
        }
        case model::DType::f16: {
            uint16_t bits;
            std::memcpy(&bits, t.data + 2 * i, 2);
            return model::half_to_float(bits);
        }
        default:
            throw model::LoadError(t.file + ": tensor " + t.name + " has an unsupported dtype");
    }
}

inline size_t elements(const model::TensorView& t) {
    size_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<size_t>(d);
    return n;
}

// Where each checkpoint tensor goes in the one weight allocation, and the
// upload through two pinned staging buffers (one fills while the other's
// copy is in flight).
class WeightUploader {
public:
    // Tensors placed one right after the other (a stacked matrix or vector),
    // starting at an aligned offset. f32: stored as fp32, else as bf16.
    size_t add(std::initializer_list<const model::TensorView*> tensors, bool f32) {
        const size_t offset = align_up(size_);
        size_t at = offset;
        for (const model::TensorView* t : tensors) {
            pieces_.push_back({t, at, f32});
            at += elements(*t) * (f32 ? 4 : 2);
        }
        size_ = at;
        return offset;
    }
    size_t size() const { return align_up(size_); }

    void upload(const DeviceMemory& device, cudaStream_t stream) {
        PinnedMemory staging[2] = {PinnedMemory(kStagingBytes), PinnedMemory(kStagingBytes)};
        cudaEvent_t done[2] = {nullptr, nullptr};
        TF_CUDA_CHECK(cudaEventCreateWithFlags(&done[0], cudaEventDisableTiming));
        TF_CUDA_CHECK(cudaEventCreateWithFlags(&done[1], cudaEventDisableTiming));
        struct Events {
            cudaEvent_t* e;
            ~Events() {
                cudaEventDestroy(e[0]);
                cudaEventDestroy(e[1]);
            }
        } guard{done};
        int which = 0;
        bool used[2] = {false, false};
        for (const Piece& p : pieces_) {
            const size_t width = p.f32 ? 4 : 2;
            const size_t total = elements(*p.tensor);
            const size_t per_chunk = kStagingBytes / width;
            for (size_t first = 0; first < total; first += per_chunk) {
                const size_t n = std::min(per_chunk, total - first);
                if (used[which]) TF_CUDA_CHECK(cudaEventSynchronize(done[which]));
                fill(*p.tensor, first, n, p.f32, staging[which].get());
                TF_CUDA_CHECK(cudaMemcpyAsync(device.get<char>(p.offset + first * width), staging[which].get(),
                                              n * width, cudaMemcpyHostToDevice, stream));
                TF_CUDA_CHECK(cudaEventRecord(done[which], stream));
                used[which] = true;
                which ^= 1;
            }
        }
        TF_CUDA_CHECK(cudaStreamSynchronize(stream));
    }

private:
    struct Piece {
        const model::TensorView* tensor;
        size_t offset;
        bool f32;
    };

    static void fill(const model::TensorView& t, size_t first, size_t n, bool f32, void* out) {
        if (f32) {
            auto* values = static_cast<float*>(out);
            if (t.dtype == model::DType::f32) {
                std::memcpy(values, t.data + 4 * first, 4 * n);
            } else {
                for (size_t i = 0; i < n; ++i) values[i] = element(t, first + i);
            }
            return;
        }
        auto* bits = static_cast<uint16_t*>(out);
        if (t.dtype == model::DType::bf16) {
            std::memcpy(bits, t.data + 2 * first, 2 * n);
        } else {
            for (size_t i = 0; i < n; ++i) bits[i] = float_to_bf16(element(t, first + i));
        }
    }

    std::vector<Piece> pieces_;
    size_t size_ = 0;
};

}  // namespace tf::gpu
