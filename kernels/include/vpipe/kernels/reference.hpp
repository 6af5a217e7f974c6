// CPU reference implementations of vpipe's filter operations, one plane at a
// time. They are the CPU path's filters and the ground truth the CUDA kernels
// are tested against. All take host planes; source and destination must not
// overlap unless stated.
#pragma once

#include <opencv2/core.hpp>

#include "vpipe/kernels/image.hpp"

namespace vpipe::ref {

enum class Interp { kNearest, kBilinear, kArea };

// A cv::Mat header over the plane (no copy).
[[nodiscard]] cv::Mat as_mat(const PlaneView& plane);

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

// dst = the rectangle (x, y, dst.width, dst.height) of src.
void crop_plane(const PlaneView& src, const PlaneView& dst, int x, int y);

// PSNR in dB between two planes of equal size (identical planes: +inf).
[[nodiscard]] double psnr(const PlaneView& a, const PlaneView& b);

}  // namespace vpipe::ref
