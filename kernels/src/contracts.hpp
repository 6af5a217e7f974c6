// The plane-shape preconditions shared by the CUDA kernels and their CPU
// references (one definition, so kernel and reference refuse the same input).
#pragma once

#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/image.hpp"

namespace vpipe::detail {

// y, its 4:2:0 chroma plane(s) with `c_channels` interleaved, an RGB(A) plane of y's size.
inline void expect_420(const PlaneView& y, const PlaneView& c, const PlaneView& rgb,
                       int c_channels) {
  VPIPE_EXPECTS(
      c.width == (y.width + 1) / 2 && c.height == (y.height + 1) / 2 && c.channels == c_channels,
      "4:2:0 chroma plane must be ceil(w/2) x ceil(h/2)");
  VPIPE_EXPECTS(
      rgb.width == y.width && rgb.height == y.height && (rgb.channels == 3 || rgb.channels == 4),
      "RGB plane must match luma and have 3 or 4 channels");
}

// NV12 source of the fused resize: any RGB(A) output size.
inline void expect_nv12_to_any_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb) {
  VPIPE_EXPECTS(
      uv.width == (y.width + 1) / 2 && uv.height == (y.height + 1) / 2 && uv.channels == 2,
      "NV12 chroma plane must be ceil(w/2) x ceil(h/2) x 2");
  VPIPE_EXPECTS(rgb.channels == 3 || rgb.channels == 4, "RGB plane needs 3 or 4 channels");
}

inline void expect_p010(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb) {
  VPIPE_EXPECTS(y.channels == 2 && uv.channels == 4 && uv.width == (y.width + 1) / 2 &&
                    uv.height == (y.height + 1) / 2 && rgb.width == y.width &&
                    rgb.height == y.height && (rgb.channels == 3 || rgb.channels == 4),
                "p010: 16-bit Y (2 bytes/pixel), UV (4 bytes/pixel), RGB(A) of Y's size");
}

// narrow_plane: 16-bit samples in, 8-bit out, same pixels.
inline void expect_narrow(const PlaneView& src, const PlaneView& dst, int depth, int shift) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height &&
                    src.channels == 2 * dst.channels && depth > 8 && depth + shift <= 16,
                "narrow: 16-bit samples of 9-16 bits in, 8-bit samples of the same pixels out");
}

inline void expect_overlay(const PlaneView& base, const PlaneView& overlay, const PlaneView& dst) {
  VPIPE_EXPECTS(overlay.channels == 4 && (base.channels == 3 || base.channels == 4) &&
                    base.channels == dst.channels && base.width == dst.width &&
                    base.height == dst.height,
                "overlay: RGBA over RGB(A) of the destination's size");
}

inline void expect_pad(const PlaneView& src, const PlaneView& dst, int x, int y) {
  VPIPE_EXPECTS(src.channels == dst.channels && x >= 0 && y >= 0 && x + src.width <= dst.width &&
                    y + src.height <= dst.height,
                "pad: the source must fit inside the destination");
}

}  // namespace vpipe::detail
