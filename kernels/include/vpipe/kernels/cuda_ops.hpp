// CUDA filter kernels. Each takes plane views (device memory, any pitch), its
// parameters, and the stream last; none synchronizes. Each has a CPU
// reference in reference.hpp that the tests compare it with. An NVTX range
// names every launch; VPIPE_DEBUG_SYNC=1 in the environment synchronizes and
// checks after each launch (CUB_DEBUG_SYNC's idea), for debugging.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "vpipe/kernels/color.hpp"
#include "vpipe/kernels/image.hpp"
#include "vpipe/kernels/reference.hpp"

namespace vpipe {
class DeviceMemoryResource;
}

namespace vpipe::cuda {

// ---- colour ----------------------------------------------------------------
// 4:2:0 chroma is taken from the 2×2 block's sample (nearest), as OpenCV does.
// `rgb` has 3 (RGB) or 4 (RGBA, alpha 255) channels.
void nv12_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream);
void yuv420p_to_rgb(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                    const PlaneView& rgb, ColorSpec spec, cudaStream_t stream);
// Chroma is the mean of the 2×2 block's Cb/Cr (edge pixels repeat for odd sizes).
void rgb_to_nv12(const PlaneView& rgb, const PlaneView& y, const PlaneView& uv, ColorSpec spec,
                 cudaStream_t stream);
void rgb_to_yuv420p(const PlaneView& rgb, const PlaneView& y, const PlaneView& u,
                    const PlaneView& v, ColorSpec spec, cudaStream_t stream);

// ---- geometry --------------------------------------------------------------
// OpenCV's conventions: bilinear samples at (x + 0.5) * scale - 0.5 with
// clamped neighbours; nearest at floor(x * scale); area averages the source
// pixels each output pixel covers (when shrinking; growing uses bilinear).
void resize_plane(const PlaneView& src, const PlaneView& dst, ref::Interp interp,
                  cudaStream_t stream);
void flip_plane(const PlaneView& src, const PlaneView& dst, bool horizontal, bool vertical,
                cudaStream_t stream);
// dst = the rectangle at (x, y) of src, dst's size (a 2-D copy).
void crop_plane(const PlaneView& src, const PlaneView& dst, int x, int y, cudaStream_t stream);

// ---- filters ---------------------------------------------------------------
// Separable Gaussian, kernel 2*ceil(3σ)+1 (σ ≤ 64), reflect-101 borders. The
// float intermediate comes from `scratch`, stream-ordered on `stream`.
void gaussian_blur_plane(const PlaneView& src, const PlaneView& dst, double sigma,
                         DeviceMemoryResource& scratch, cudaStream_t stream);
void invert_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream);
// dst = lut[src]: brightness, contrast and gamma become one table.
void lut_plane(const PlaneView& src, const PlaneView& dst, const std::uint8_t (&lut)[256],
               cudaStream_t stream);
void fill_plane(const PlaneView& dst, std::uint8_t value, cudaStream_t stream);

// ---- fused -----------------------------------------------------------------
// NV12 → resized RGB(A) in one pass (bilinear on Y and on UV, then colour):
// each source byte is read once, each output byte written once.
void nv12_resize_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb,
                        ColorSpec spec, cudaStream_t stream);

}  // namespace vpipe::cuda
