// Small CUDA kernels for tests and benchmarks: they write and check patterns
// and stand in for per-frame work (NV12 → float RGB → RGB8, BT.709 limited
// range), so memory strategies are measured with real kernels touching real
// buffers. All launch on `stream`, last argument, with no synchronization.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace vpipe::synthetic {

// words[i] = hash(i) ^ seed.
void fill_pattern(std::uint32_t* words, std::size_t count, std::uint32_t seed, cudaStream_t stream);
// Adds to *mismatches the number of words that differ from fill_pattern's.
void count_mismatches(const std::uint32_t* words, std::size_t count, std::uint32_t seed,
                      unsigned long long* mismatches, cudaStream_t stream);
// NV12 (Y plane then interleaved UV, both with `pitch`) → packed float RGB.
void nv12_to_rgbf(const std::uint8_t* nv12, std::size_t pitch, int width, int height, float* rgb,
                  cudaStream_t stream);
// Packed float RGB in [0,1] → packed RGB8.
void rgbf_to_rgb8(const float* rgb, int width, int height, std::uint8_t* out, cudaStream_t stream);

}  // namespace vpipe::synthetic
