// TF_HOST_DEVICE marks the index arithmetic the kernels share with their
// host emulations (tests/gpu/): compiled for both sides under nvcc, plain
// inline C++ under g++, so a test on the CPU runs the very functions the
// device runs.
#pragma once

#ifdef __CUDACC__
#define TF_HOST_DEVICE __host__ __device__
#else
#define TF_HOST_DEVICE
#endif
