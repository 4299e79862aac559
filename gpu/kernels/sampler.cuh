// The device sampler: model::sample() (model/sampling.h) on the device, one
// thread block per output row, without sorting the vocabulary.
//
// Order key: (logit descending, id ascending) as one 64-bit integer, larger
// = earlier: the logit's bits made order-preserving (-0 taken as +0, as
// float comparison does) in the high half, 0xffffffff - id in the low half.
// The argmax is the largest key, so greedy picks exactly the lowest id among
// the highest logits.
//
// Without a cut, every id is a candidate in id order: each thread sums the
// weights exp((logit - max) / T) (double) of a contiguous run of ids, one
// thread adds the runs in order, and the thread whose run holds the target
// finds the token in it. With top_k, top_p or min_p, the candidates (logit
// within 30 * T of the best, as model::sample() decides it) are compacted in
// id order into scratch, and every cut is a binary search over the key:
// the k-th largest key for top_k, the largest key whose kept weight sum
// (keys at or above it) reaches top_p of the total for top_p, a weight floor
// for min_p, and at last the largest key whose kept sum exceeds the target
// u * kept_total, which is the sampled token. Each sum is a block_reduce in
// fixed order, so it grows monotonically as the key falls and the searches
// are well defined; it differs from the CPU's sequential sum only in
// rounding, which can change a pick only at a rounding boundary.
//
// Cost: a cut takes up to 64 passes over the candidates per search; fine for
// candidate sets of a few thousand, slower for a flat distribution over a
// large vocabulary. Greedy and uncut sampling take one or two passes.
#pragma once

#include "gpu/kernels/common.cuh"

namespace tf::gpu::kernels {

constexpr int kSampleThreads = 256;

// kernels

// SplitMix64, bit for bit as model/sampling.cpp (integer only).
__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__device__ __forceinline__ double uniform_at(uint64_t seed, int64_t position) {
    const uint64_t bits = splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(position));
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

__device__ __forceinline__ unsigned long long order_key(float logit, int32_t id) {
    uint32_t bits = __float_as_uint(logit);
    if ((bits << 1) == 0) bits = 0;  // -0 == +0
    bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    return (static_cast<unsigned long long>(bits) << 32) | (0xffffffffu - static_cast<uint32_t>(id));
}

__device__ __forceinline__ int32_t key_id(unsigned long long key) {
    return static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(key & 0xffffffffull));
}

// The largest t in [lo, hi] with pred(t), for pred true at lo and monotone
// (true up to some key, false above); lo when pred(lo) is false.
template <typename Pred>
__device__ unsigned long long largest_key(unsigned long long lo, unsigned long long hi, Pred pred) {
    while (lo < hi) {
        const unsigned long long span = hi - lo;
        const unsigned long long mid = lo + span / 2 + (span & 1);
        if (pred(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

__global__ void __launch_bounds__(kSampleThreads)
sample_kernel(const float* logits, int32_t vocab, const DeviceSampler* samplers, int32_t count,
              unsigned long long* key_scratch, double* weight_scratch, int32_t* tokens) {
    __shared__ double shared_sum[33];
    __shared__ unsigned long long shared_key[33];
    __shared__ long long shared_count[33];
    __shared__ double run_prefix[kSampleThreads + 1];
    __shared__ double run_sum[kSampleThreads];
    __shared__ int32_t run_offset[kSampleThreads + 1];
    __shared__ int32_t run_count[kSampleThreads];
    __shared__ int32_t picked;

    const int tid = threadIdx.x;
    unsigned long long* keys = key_scratch + static_cast<size_t>(blockIdx.x) * vocab;
    double* weights = weight_scratch + static_cast<size_t>(blockIdx.x) * vocab;
    // This thread's contiguous run of ids.
    const int32_t run = (vocab + kSampleThreads - 1) / kSampleThreads;
    const int32_t begin = min(vocab, tid * run), end = min(vocab, begin + run);

    for (int32_t o = blockIdx.x; o < count; o += gridDim.x) {
        const DeviceSampler s = samplers[o];
        if (!s.active) continue;  // the same for the whole block
        const float* row = logits + static_cast<size_t>(o) * vocab;

        unsigned long long best_key = 0;
        for (int32_t i = tid; i < vocab; i += kSampleThreads) {
            const unsigned long long key = order_key(row[i], i);
            best_key = key > best_key ? key : best_key;
        }
        best_key = block_reduce(best_key, 0ull, shared_key, MaxOp{});
        const int32_t best = key_id(best_key);
        if (s.temperature <= 0.0f || vocab == 1) {
            if (tid == 0) tokens[o] = best;
            continue;
        }
        const double inv_t = 1.0 / static_cast<double>(s.temperature);
        const float max_logit = row[best];
        auto weight_of = [&](float logit) {
            return exp((static_cast<double>(logit) - static_cast<double>(max_logit)) * inv_t);
        };
        const double u = uniform_at(s.seed, s.position);

        if (!(s.top_k > 0 || s.top_p < 1.0f || s.min_p > 0.0f)) {
            // Every id a candidate, in id order.
            double mine = 0.0;
            for (int32_t i = begin; i < end; ++i) mine += weight_of(row[i]);
            run_sum[tid] = mine;
            __syncthreads();
            if (tid == 0) {
                double total = 0.0;
                run_prefix[0] = 0.0;
                for (int c = 0; c < kSampleThreads; ++c) {
                    total = total + run_sum[c];
                    run_prefix[c + 1] = total;
                }
                picked = vocab - 1;  // the last candidate when rounding leaves the target at the total
            }
            __syncthreads();
            const double target = u * run_prefix[kSampleThreads];
            // The running sum at id i of this run is run_prefix[tid] + (the
            // run's own sum up to i); at the run's end it equals
            // run_prefix[tid + 1] exactly, so exactly one run holds the target.
            if (target < run_prefix[tid + 1] && !(target < run_prefix[tid])) {
                double partial = 0.0;
                for (int32_t i = begin; i < end; ++i) {
                    partial += weight_of(row[i]);
                    if (target < run_prefix[tid] + partial) {
                        picked = i;
                        break;
                    }
                }
            }
            __syncthreads();
            if (tid == 0) tokens[o] = picked;
            __syncthreads();  // picked and the prefix are reused by the next row
            continue;
        }

        // Candidates, compacted in id order.
        auto candidate = [&](float logit) {
            const float gap = max_logit - logit;  // a float difference, as model::sample() computes it
            return static_cast<double>(gap) * inv_t < 30.0;
        };
        int32_t mine = 0;
        for (int32_t i = begin; i < end; ++i) mine += candidate(row[i]) ? 1 : 0;
        run_count[tid] = mine;
        __syncthreads();
        if (tid == 0) {
            run_offset[0] = 0;
            for (int c = 0; c < kSampleThreads; ++c) run_offset[c + 1] = run_offset[c] + run_count[c];
        }
        __syncthreads();
        for (int32_t i = begin, at = run_offset[tid]; i < end; ++i) {
            if (!candidate(row[i])) continue;
            keys[at] = order_key(row[i], i);
            weights[at] = weight_of(row[i]);
            ++at;
        }
        const int32_t n = run_offset[kSampleThreads];
        __syncthreads();  // the scratch is written before any thread reads it

        // Sum of the weights of candidates with key >= max(t, cut) whose
        // weight reaches `floor` (the best always does).
        auto kept_sum = [&](unsigned long long t, unsigned long long cut, double floor) {
            double acc = 0.0;
            for (int32_t j = tid; j < n; j += kSampleThreads) {
                const unsigned long long key = keys[j];
                const double w = weights[j];
                if (key >= t && key >= cut && (w >= floor || key == best_key)) acc += w;
            }
            return block_reduce(acc, 0.0, shared_sum, SumOp{});
        };
        auto count_at_least = [&](unsigned long long t) {
            long long c = 0;
            for (int32_t j = tid; j < n; j += kSampleThreads) c += keys[j] >= t ? 1 : 0;
            return block_reduce(c, 0ll, shared_count, SumOp{});
        };
        unsigned long long lowest = ~0ull;
        for (int32_t j = tid; j < n; j += kSampleThreads) lowest = keys[j] < lowest ? keys[j] : lowest;
        lowest = block_reduce(lowest, ~0ull, shared_key, MinOp{});

        // top_k: the k-th largest key.
        unsigned long long cut = lowest;
        if (s.top_k > 0 && s.top_k < n) {
            cut = largest_key(lowest, best_key, [&](unsigned long long t) { return count_at_least(t) >= s.top_k; });
        }
        // top_p: the shortest prefix whose weight reaches top_p of the total.
        if (s.top_p < 1.0f) {
            const double threshold = static_cast<double>(s.top_p) * kept_sum(cut, cut, 0.0);
            const unsigned long long top_k_cut = cut;
            cut = largest_key(top_k_cut, best_key,
                              [&](unsigned long long t) { return kept_sum(t, top_k_cut, 0.0) >= threshold; });
        }
        // min_p: weights of at least min_p times the best one's.
        const double floor = s.min_p > 0.0f ? static_cast<double>(s.min_p) * weight_of(max_logit) : 0.0;
        const double kept_total = kept_sum(cut, cut, floor);
        const double target = u * kept_total;
        // The last kept candidate: the fallback when the target reaches the total.
        unsigned long long last = ~0ull;
        for (int32_t j = tid; j < n; j += kSampleThreads) {
            const unsigned long long key = keys[j];
            if (key >= cut && (weights[j] >= floor || key == best_key) && key < last) last = key;
        }
        last = block_reduce(last, ~0ull, shared_key, MinOp{});
        const unsigned long long chosen =
            largest_key(last, best_key, [&](unsigned long long t) { return kept_sum(t, cut, floor) > target; });
        if (tid == 0) tokens[o] = key_id(chosen);
        __syncthreads();  // the scratch is rewritten by the next row
    }
}

// launchers

void sample(const float* logits, int32_t vocab, const DeviceSampler* samplers, int32_t count,
            unsigned long long* key_scratch, double* weight_scratch, int32_t* tokens, cudaStream_t stream) {
    TF_GPU_REQUIRE(count > 0 && vocab > 0, "sample: empty shape");
    const int32_t blocks = count < kSamplerBlocks ? count : kSamplerBlocks;
    sample_kernel<<<blocks, kSampleThreads, 0, stream>>>(logits, vocab, samplers, count, key_scratch, weight_scratch,
                                                         tokens);
    TF_CUDA_CHECK_LAUNCH("sample_kernel");
}

}  // namespace tf::gpu::kernels
