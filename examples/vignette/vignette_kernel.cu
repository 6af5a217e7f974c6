#include "vignette_kernel.hpp"

namespace {
__global__ void vignette_kernel(const std::uint8_t* src, std::size_t sp, std::uint8_t* dst,
                                std::size_t dp, int w, int h, float strength) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  dst[y * dp + x] = vignette_apply(src[y * sp + x], vignette_gain(x, y, w, h, strength));
}
}  // namespace

void vignette_luma_cuda(const std::uint8_t* src, std::size_t src_pitch, std::uint8_t* dst,
                        std::size_t dst_pitch, int width, int height, float strength,
                        cudaStream_t stream) {
  const dim3 block(32, 8), grid((width + 31) / 32, (height + 7) / 8);
  vignette_kernel<<<grid, block, 0, stream>>>(src, src_pitch, dst, dst_pitch, width, height,
                                              strength);
}
