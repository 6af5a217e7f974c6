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
// resize_plane over a frame's n planes (up to four, src[i] → dst[i]): exact halves of every
// plane, and area shrinks of every plane to exactly 2/3 (1080p → 720p: integer sums of
// weight 9), run as one launch; otherwise one resize_plane per plane.
void resize_planes(const PlaneView* src, const PlaneView* dst, int n, ref::Interp interp,
                   cudaStream_t stream);
void flip_plane(const PlaneView& src, const PlaneView& dst, bool horizontal, bool vertical,
                cudaStream_t stream);
// dst = the rectangle at (x, y) of src, dst's size (a 2-D copy).
void crop_plane(const PlaneView& src, const PlaneView& dst, int x, int y, cudaStream_t stream);

// ---- filters ---------------------------------------------------------------
// Separable Gaussian, kernel 2*ceil(3σ)+1 (σ ≤ 64), reflect-101 borders.
// Radii up to 8 (σ ≤ 2.67; box radius ≤ 8) with 1–4 channels run both passes
// in one kernel through shared memory and allocate nothing (the plain blur and
// box blur in packed half precision, ±1 LSB of the reference; unsharp in float); larger radii,
// and src == dst, take two passes through a float intermediate from
// `scratch`, stream-ordered on `stream`.
void gaussian_blur_plane(const PlaneView& src, const PlaneView& dst, double sigma,
                         DeviceMemoryResource& scratch, cudaStream_t stream);
// Box blur: mean of the (2r+1)² neighbourhood, reflect-101 borders (r ≤ 192).
void box_blur_plane(const PlaneView& src, const PlaneView& dst, int radius,
                    DeviceMemoryResource& scratch, cudaStream_t stream);
// Unsharp mask: dst = src + amount * (src − gaussian(src, sigma)).
void unsharp_plane(const PlaneView& src, const PlaneView& dst, double sigma, double amount,
                   DeviceMemoryResource& scratch, cudaStream_t stream);
// Sobel edges: sqrt(Gx² + Gy²) of the 3×3 Sobel derivatives, per channel,
// reflect-101 borders, clamped to 255.
void sobel_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream);
// Pad / letterbox: dst filled with `fill`, src copied at (x, y) inside it.
void pad_plane(const PlaneView& src, const PlaneView& dst, int x, int y, std::uint8_t fill,
               cudaStream_t stream);
// Pad by repeating the right column and bottom row (src at the top left of
// dst): OpenCV's BORDER_REPLICATE, what an odd-sized picture gets for 4:2:0.
void pad_edge_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream);
// Alpha overlay (a watermark): dst = base, with the RGBA `overlay` blended in
// at (x, y): c = base·(1 − a) + over·a, a = over_alpha/255 · opacity. base and
// dst are RGB or RGBA (alpha kept), the same size.
void overlay_rgba(const PlaneView& base, const PlaneView& overlay, const PlaneView& dst, int x,
                  int y, float opacity, cudaStream_t stream);
// P010 (10-bit in the high bits of 16-bit samples; `y` has channels = 2
// bytes per pixel, `uv` 4) → 8-bit RGB(A), keeping the 10-bit precision
// until the final rounding.
void p010_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream);
void invert_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream);
// 9-16-bit samples → 8 bits (see ref::narrow_plane): NVDEC's P010 for the
// 8-bit filters.
void narrow_plane(const PlaneView& src, const PlaneView& dst, int depth, int shift,
                  cudaStream_t stream);
// YUV420P's U and V planes into NV12's UV plane (an exact copy).
void interleave_uv(const PlaneView& u, const PlaneView& v, const PlaneView& uv,
                   cudaStream_t stream);
// dst = lut[src]: brightness, contrast and gamma become one table.
void lut_plane(const PlaneView& src, const PlaneView& dst, const std::uint8_t (&lut)[256],
               cudaStream_t stream);
void fill_plane(const PlaneView& dst, std::uint8_t value, cudaStream_t stream);
// Copies `src`'s pixels (row_bytes() × height) to `dst`, whose rows are
// `dst_pitch` apart, on `stream`: the one plane copy every stage uses (upload,
// download, staging slots, device-to-device passthroughs).
// Under stream capture a device-to-device copy is a kernel (see capturing()).
void copy_plane(const PlaneView& src, void* dst, std::size_t dst_pitch, cudaMemcpyKind kind,
                cudaStream_t stream);
// True while `stream` is being captured into a CUDA Graph (--graphs): copies
// and fills then run as kernels, whose nodes' pointers can be moved per frame.
[[nodiscard]] bool capturing(cudaStream_t stream);
void copy_plane_by_kernel(const PlaneView& src, void* dst, std::size_t dst_pitch,
                          cudaStream_t stream);

// ---- fused -----------------------------------------------------------------
// NV12 → resized RGB(A) in one pass (each plane sampled at the output's
// pixels — bilinear, nearest, or area where the plane shrinks — then
// colour): each source byte is read once, each output byte written once.
void nv12_resize_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb,
                        ColorSpec spec, ref::Interp interp, cudaStream_t stream);

}  // namespace vpipe::cuda
