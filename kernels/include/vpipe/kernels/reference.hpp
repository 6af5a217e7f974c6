// CPU reference implementations of vpipe's filter operations, one plane at a
// time. They are the CPU path's filters and the ground truth the CUDA kernels
// are tested against. All take host planes; source and destination must not
// overlap unless stated.
#pragma once

#include "vpipe/kernels/color.hpp"
#include "vpipe/kernels/image.hpp"

namespace vpipe::ref {

void copy_plane(const PlaneView& src, const PlaneView& dst);
void fill_plane(const PlaneView& dst, std::uint8_t value);

// Resize src into dst's size. kArea is OpenCV's INTER_AREA (pixel-area
// averaging), the right choice when shrinking.
void resize_plane(const PlaneView& src, const PlaneView& dst, Interp interp);

// Separable Gaussian blur, kernel size 2*ceil(3*sigma)+1, borders reflected
// (OpenCV's BORDER_REFLECT_101). sigma > 0.
void gaussian_blur_plane(const PlaneView& src, const PlaneView& dst, double sigma);

// Mirror horizontally and/or vertically. In place (src == dst) is allowed.
void flip_plane(const PlaneView& src, const PlaneView& dst, bool horizontal, bool vertical);

// dst = 255 - src. In place is allowed.
void invert_plane(const PlaneView& src, const PlaneView& dst);
void interleave_uv(const PlaneView& u, const PlaneView& v, const PlaneView& uv);

// dst = the rectangle (x, y, dst.width, dst.height) of src.
void crop_plane(const PlaneView& src, const PlaneView& dst, int x, int y);
// dst (no smaller than src) holds src at its top-left corner, the rest filled
// by repeating src's last column and row (cv::copyMakeBorder, replicate).
void pad_plane(const PlaneView& src, const PlaneView& dst);

// Colour conversion (plain C++ on color.hpp's formulas; OpenCV has only
// BT.601 limited range for NV12). Same conventions as the CUDA kernels.
void nv12_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec);
void yuv420p_to_rgb(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                    const PlaneView& rgb, ColorSpec spec);
void rgb_to_nv12(const PlaneView& rgb, const PlaneView& y, const PlaneView& uv, ColorSpec spec);
void rgb_to_yuv420p(const PlaneView& rgb, const PlaneView& y, const PlaneView& u,
                    const PlaneView& v, ColorSpec spec);
// NV12 → resized RGB(A) in one pass, each plane sampled at the output's
// pixels and the samples unrounded into the colour step. kBilinear and
// kNearest as resize_plane; kArea averages the footprint where the plane
// shrinks in both directions and is bilinear where it does not (the chroma
// plane, half the luma's size, often grows), as resize_plane does per plane.
void nv12_resize_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb,
                        ColorSpec spec, Interp interp = Interp::kBilinear);

// The table for brightness (-1..1, added), contrast (0.. , around mid-grey)
// and gamma (> 0): out = 255 * clamp(((v/255 - .5) * contrast + .5 + brightness))^(1/gamma).
void make_eq_lut(double brightness, double contrast, double gamma, std::uint8_t (&lut)[256]);
void lut_plane(const PlaneView& src, const PlaneView& dst, const std::uint8_t (&lut)[256]);

// One field of an interlaced picture kept (the top one: rows 0, 2, 4…; else rows 1, 3, 5…),
// the other's rows made from it by bwdif's spatial interpolation (FFmpeg's coefficients:
// (5077·(c + e) − 981·(a + g)) / 8192 of the kept rows a, c above and e, g below; the
// mean of c and e where a or g falls outside; the one row there is at an edge).
void deinterlace_plane(const PlaneView& src, const PlaneView& dst, bool keep_top);

// Box blur (OpenCV's normalized box filter, in float), unsharp mask (OpenCV
// Gaussian in float, then the combination), Sobel magnitude (OpenCV 16-bit
// derivatives, float magnitude), pad, alpha overlay and P010 → RGB (plain
// C++). Same contracts as the CUDA kernels in cuda_ops.hpp.
void box_blur_plane(const PlaneView& src, const PlaneView& dst, int radius);
void unsharp_plane(const PlaneView& src, const PlaneView& dst, double sigma, double amount);
void sobel_plane(const PlaneView& src, const PlaneView& dst);
void pad_plane(const PlaneView& src, const PlaneView& dst, int x, int y, std::uint8_t fill);
void overlay_rgba(const PlaneView& base, const PlaneView& overlay, const PlaneView& dst, int x,
                  int y, float opacity);
void p010_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec);
// Little-endian 16-bit samples of `depth` bits at bit `shift` (p010: 10 at 6,
// yuv420p10le: 10 at 0) → 8 bits, rounded half up, clamped at 255:
// ((v >> shift) + 2^(depth-9)) >> (depth - 8). Same contract as cuda::narrow_plane.
void narrow_plane(const PlaneView& src, const PlaneView& dst, int depth, int shift);

// PSNR in dB between two planes of equal size (identical planes: +inf).
[[nodiscard]] double psnr(const PlaneView& a, const PlaneView& b);

}  // namespace vpipe::ref
