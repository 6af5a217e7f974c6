#include "vpipe/kernels/synthetic.hpp"

namespace vpipe::synthetic {

namespace {

__device__ __forceinline__ std::uint32_t pattern(std::size_t i, std::uint32_t seed) {
  auto x = static_cast<std::uint32_t>(i) * 2654435761u + static_cast<std::uint32_t>(i >> 32);
  x ^= x >> 15;
  return x ^ seed;
}

__global__ void fill_kernel(std::uint32_t* w, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    w[i] = pattern(i, seed);
}

__global__ void check_kernel(const std::uint32_t* w, std::size_t n, std::uint32_t seed,
                             unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    local += w[i] != pattern(i, seed);
  if (local) atomicAdd(bad, local);
}

__global__ void nv12_kernel(const std::uint8_t* nv12, std::size_t pitch, int w, int h, float* rgb) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const float Y = (nv12[y * pitch + x] - 16.f) * (255.f / 219.f);
  const std::uint8_t* uv = nv12 + static_cast<std::size_t>(h) * pitch + (y / 2) * pitch + (x & ~1);
  const float U = (uv[0] - 128.f) * (255.f / 224.f), V = (uv[1] - 128.f) * (255.f / 224.f);
  float* o = rgb + 3 * (static_cast<std::size_t>(y) * w + x);
  o[0] = fminf(fmaxf((Y + 1.5748f * V) / 255.f, 0.f), 1.f);
  o[1] = fminf(fmaxf((Y - 0.1873f * U - 0.4681f * V) / 255.f, 0.f), 1.f);
  o[2] = fminf(fmaxf((Y + 1.8556f * U) / 255.f, 0.f), 1.f);
}

__global__ void rgb8_kernel(const float* rgb, std::size_t n, std::uint8_t* out) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = static_cast<std::uint8_t>(rgb[i] * 255.f + 0.5f);
}

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

}  // namespace

void fill_pattern(std::uint32_t* words, std::size_t count, std::uint32_t seed,
                  cudaStream_t stream) {
  fill_kernel<<<grid_for(count), 256, 0, stream>>>(words, count, seed);
}

void count_mismatches(const std::uint32_t* words, std::size_t count, std::uint32_t seed,
                      unsigned long long* mismatches, cudaStream_t stream) {
  check_kernel<<<grid_for(count), 256, 0, stream>>>(words, count, seed, mismatches);
}

void nv12_to_rgbf(const std::uint8_t* nv12, std::size_t pitch, int width, int height, float* rgb,
                  cudaStream_t stream) {
  const dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
  nv12_kernel<<<grid, block, 0, stream>>>(nv12, pitch, width, height, rgb);
}

void rgbf_to_rgb8(const float* rgb, int width, int height, std::uint8_t* out, cudaStream_t stream) {
  const std::size_t n = static_cast<std::size_t>(width) * height * 3;
  rgb8_kernel<<<grid_for(n), 256, 0, stream>>>(rgb, n, out);
}

}  // namespace vpipe::synthetic
