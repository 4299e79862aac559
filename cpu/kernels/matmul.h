// Matmul: y = x W^T with W in bf16 (or fp32) and x, y in fp32. The kernels
// themselves live in kernels_impl.inc (one source, three SIMD paths); this
// header has the activation layout, the launcher that spreads output
// columns over threads, and the double-precision reference used in tests.
//
// Batch invariance: an output element is one thread's serial reduction over
// K in a fixed order; threads split N (output columns), never K; so an
// element does not depend on M, on the thread count or on the split.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "cpu/kernels/isa.h"
#include "cpu/kernels/packing.h"
#include "cpu/thread_pool.h"

namespace tf::cpu::kernels {

// kernels

// W[n][k] as fp32, whatever its format (tests and the embedding lookup).
inline float weight_at(const WeightMatrix& w, int32_t n, int32_t k) {
    if (w.format == WeightFormat::bf16 || w.format == WeightFormat::bf16_tiled) {
        const size_t at = w.format == WeightFormat::bf16 ? static_cast<size_t>(n) * w.stride + k : tiled_offset(n, k, w.stride);
        uint16_t bits16;
        std::memcpy(&bits16, static_cast<const uint16_t*>(w.data) + at, 2);
        uint32_t bits = static_cast<uint32_t>(bits16) << 16;
        float value;
        std::memcpy(&value, &bits, 4);
        return value;
    }
    const int32_t block = k / 32 * 32, l = k % 32;
    const int32_t at = block + (l % 2 == 0 ? l / 2 : 16 + l / 2);
    return static_cast<const float*>(w.data)[static_cast<size_t>(n) * w.stride + at];
}

// The reference: sums in double, in plain k order. Not bitwise comparable
// with the kernels; tests bound the difference.
inline std::vector<double> matmul_reference(const float* x, int32_t M, const WeightMatrix& w) {
    std::vector<double> out(static_cast<size_t>(M) * w.rows);
    for (int32_t m = 0; m < M; ++m)
        for (int32_t n = 0; n < w.rows; ++n) {
            double sum = 0;
            for (int32_t k = 0; k < w.cols; ++k) sum += static_cast<double>(x[static_cast<size_t>(m) * w.cols + k]) * weight_at(w, n, k);
            out[static_cast<size_t>(m) * w.rows + n] = sum;
        }
    return out;
}

// launchers

// One weight matrix applied to the shared input: out[m * ldo + n].
struct MatmulJob {
    const WeightMatrix* w;
    float* out;
    int32_t ldo;
};

// Columns a thread takes at a time: whole weight tiles of every format
// (bf16's kTileRows = 8, the quantized formats' 16, quant_layout.h).
constexpr int32_t kMatmulColumnGroup = 16;
static_assert(kMatmulColumnGroup % kTileRows == 0);

// Runs `kernel` for every job on the M rows of `xs` (packed as that kernel
// reads them), in one parallel region. Columns go to threads in groups of
// kMatmulColumnGroup, contiguously across the jobs, so q/k/v (or gate/up)
// share one fork-join and a thread streams whole tiles. The float kernels
// (KernelTable) and the quantized ones (quant_matmul.h) both run through
// here.
inline void matmul(MatmulFn kernel, ThreadPool& pool, const void* xs, int32_t M, std::initializer_list<MatmulJob> jobs) {
    constexpr int32_t kGroup = kMatmulColumnGroup;
    int64_t groups = 0;
    for (const MatmulJob& job : jobs) {
        assert(job.w->stride == jobs.begin()->w->stride);  // one input for all jobs
        assert(job.w->stride % 32 == 0 && job.w->stride >= job.w->cols);
        assert(job.ldo >= job.w->rows);
        groups += (job.w->rows + kGroup - 1) / kGroup;
    }
    if (M == 0) return;
    pool.parallel_for(groups, [&](int64_t begin, int64_t end) {
        int64_t first = 0;  // the first group of the current job
        for (const MatmulJob& job : jobs) {
            const int64_t count = (job.w->rows + kGroup - 1) / kGroup;
            const int64_t lo = std::max(begin, first), hi = std::min(end, first + count);
            if (lo < hi) {
                const auto n_begin = static_cast<int32_t>((lo - first) * kGroup);
                const auto n_end = static_cast<int32_t>(std::min<int64_t>((hi - first) * kGroup, job.w->rows));
                kernel(xs, M, *job.w, n_begin, n_end, job.out, job.ldo);
            }
            first += count;
        }
    });
}

// One block of input rows with the jobs that read it: for a mixture of
// experts, the rows routed to one expert and that expert's matrices.
struct MatmulBatch {
    const void* xs;  // M rows, packed for the jobs' kernel
    int32_t M;
    MatmulJob jobs[2];
    int32_t job_count;
};

// A batch's share of the work: columns [n_begin, n_end) of one job.
struct MatmulUnit {
    int32_t batch, job, n_begin, n_end;
};

// Runs every batch (each its own input and M) in one parallel region:
// column groups of all batches' jobs go to threads, so the experts of a
// layer cost one fork-join instead of one each. `units` is scratch kept by
// the caller. Each output element is still one kernel call's reduction over
// K, so batch invariance holds as in matmul().
inline void matmul_batches(MatmulFn kernel, ThreadPool& pool, const std::vector<MatmulBatch>& batches,
                           std::vector<MatmulUnit>& units) {
    constexpr int32_t kGroup = kMatmulColumnGroup;
    units.clear();
    for (int32_t b = 0; b < static_cast<int32_t>(batches.size()); ++b) {
        const MatmulBatch& batch = batches[b];
        if (batch.M == 0) continue;
        for (int32_t j = 0; j < batch.job_count; ++j) {
            const MatmulJob& job = batch.jobs[j];
            assert(job.w->stride == batch.jobs[0].w->stride);  // one input for the batch's jobs
            assert(job.w->stride % 32 == 0 && job.w->stride >= job.w->cols);
            assert(job.ldo >= job.w->rows);
            for (int32_t n = 0; n < job.w->rows; n += kGroup) units.push_back({b, j, n, std::min(n + kGroup, job.w->rows)});
        }
    }
    pool.parallel_for(static_cast<int64_t>(units.size()), [&](int64_t begin, int64_t end) {
        // Neighbouring units of one job become one kernel call.
        for (int64_t u = begin; u < end;) {
            const MatmulUnit& first = units[u];
            int32_t n_end = first.n_end;
            int64_t next = u + 1;
            while (next < end && units[next].batch == first.batch && units[next].job == first.job) n_end = units[next++].n_end;
            const MatmulBatch& batch = batches[first.batch];
            const MatmulJob& job = batch.jobs[first.job];
            kernel(batch.xs, batch.M, *job.w, first.n_begin, n_end, job.out, job.ldo);
            u = next;
        }
    });
}

// The float path's kernel on rows packed by kernels.pack_rows
// (kernels.row_bytes(K) bytes apart).
inline void matmul(const KernelTable& kernels, ThreadPool& pool, const void* xs, int32_t M,
                   std::initializer_list<MatmulJob> jobs) {
    matmul(kernels.matmul, pool, xs, M, jobs);
}

}  // namespace tf::cpu::kernels
