// The vignette's arithmetic, shared by the CPU loop and the CUDA kernel, and
// the kernel's launch function. (Kept free of vpipe headers: .cu files are
// compiled as C++17.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define VIGNETTE_HD __host__ __device__ __forceinline__
#else
#define VIGNETTE_HD inline
#endif

// Gain at pixel (x, y) of a w×h plane: 1 at the centre, 1 − strength at the corners.
VIGNETTE_HD float vignette_gain(int x, int y, int w, int h, float strength) {
  const float dx = (x + 0.5f) / w - 0.5f, dy = (y + 0.5f) / h - 0.5f;
  return 1.f - strength * (dx * dx + dy * dy) * 2.f;
}

VIGNETTE_HD std::uint8_t vignette_apply(std::uint8_t v, float gain) {
  return static_cast<std::uint8_t>(v * gain + 0.5f);
}

// dst = src scaled by the gain, on `stream`.
void vignette_luma_cuda(const std::uint8_t* src, std::size_t src_pitch, std::uint8_t* dst,
                        std::size_t dst_pitch, int width, int height, float strength,
                        cudaStream_t stream);
