// The machine's compute peak for each inner instruction sequence the CPU
// kernels use, measured: every loop keeps 8 to 12 independent accumulator chains
// in registers (AMX: 4 accumulator tiles), so the issue rate, not the
// latency, bounds it. Each function is compiled for its own instruction set
// (a target attribute), so the program runs on any x86-64 and measures only
// what the CPU has.
//
// Thread-safety: the measurements are pure functions; measure_peak runs one
// copy per thread at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tf::bench {

// One inner sequence: what one issue of it computes.
struct PeakLoop {
    std::string name;          // e.g. "VPDPBUSD ymm"
    std::string unit;          // "GFLOP/s" (fp) or "GOP/s" (int8); a multiply-add is 2
    int64_t ops_per_step = 0;  // ops one step of the loop computes (a step: the listed instructions once)
    bool (*supported)() = nullptr;
    // Runs `steps` steps on each of its chains (the AMX loop: 4 tiles) and
    // returns a value that depends on all of them, so none is optimized away.
    double (*run)(int64_t steps) = nullptr;
};

// Every loop this program knows, whether or not the CPU runs it: fp32 FMA
// (ymm, zmm), VDPBF16PS zmm, VPMADDUBSW + VPMADDWD + VPADDD (ymm, zmm),
// VPDPBUSD (ymm: AVX-VNNI, zmm: AVX512-VNNI), AMX TDPBUSD and TDPBF16PS.
const std::vector<PeakLoop>& peak_loops();

// Ops per second with `threads` threads each running the loop at once: the
// ops of all threads over the time from the common start to the last finish.
double measure_peak(const PeakLoop& loop, int threads, double seconds);

}  // namespace tf::bench
