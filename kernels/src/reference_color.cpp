// Plain C++ references for colour conversion and the fused resize+convert.
#include <algorithm>
#include <cmath>
#include <opencv2/core.hpp>

#include "as_mat.hpp"
#include "contracts.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/reference.hpp"

namespace vpipe::ref {

namespace {

void put_rgb(const PlaneView& rgb, int x, int yy, float r, float g, float b) {
  std::uint8_t* o = rgb.row(yy) + x * rgb.channels;
  o[0] = clamp_u8(r);
  o[1] = clamp_u8(g);
  o[2] = clamp_u8(b);
  if (rgb.channels == 4) o[3] = 255;
}

// Bilinear sample of channel `ch` at (fx, fy) source coordinates, OpenCV's
// clamping at the borders.
float sample_bilinear(const PlaneView& p, float fx, float fy, int ch) {
  const int x0 = static_cast<int>(std::floor(fx)), y0 = static_cast<int>(std::floor(fy));
  const float ax = fx - static_cast<float>(x0), ay = fy - static_cast<float>(y0);
  auto at = [&](int x, int yy) {
    x = std::clamp(x, 0, p.width - 1);
    yy = std::clamp(yy, 0, p.height - 1);
    return static_cast<float>(p.row(yy)[x * p.channels + ch]);
  };
  return (1 - ay) * ((1 - ax) * at(x0, y0) + ax * at(x0 + 1, y0)) +
         ay * ((1 - ax) * at(x0, y0 + 1) + ax * at(x0 + 1, y0 + 1));
}

// Nearest sample: floor(x * scale), as resize_plane's kNearest.
float sample_nearest(const PlaneView& p, int x, int yy, double sx, double sy, int ch) {
  const int xs = std::min(static_cast<int>(std::floor(x * sx)), p.width - 1);
  const int ys = std::min(static_cast<int>(std::floor(yy * sy)), p.height - 1);
  return p.row(ys)[xs * p.channels + ch];
}

// Area sample: the source pixels the output pixel's footprint covers,
// weighted by overlap (sx, sy ≥ 1), as resize_plane's kArea kernel; the footprint moved by
// (shx, shy) pixels (a chroma plane's siting) and kept inside the plane.
float sample_area(const PlaneView& p, int x, int yy, double sx, double sy, int ch, double shx = 0,
                  double shy = 0) {
  const double x0 = std::max(x * sx + shx, 0.0),
               x1 = std::min((x + 1) * sx + shx, static_cast<double>(p.width));
  const double y0 = std::max(yy * sy + shy, 0.0),
               y1 = std::min((yy + 1) * sy + shy, static_cast<double>(p.height));
  float acc = 0;
  for (int ys = static_cast<int>(std::floor(y0)); ys < static_cast<int>(std::ceil(y1)); ++ys) {
    const auto wy =
        static_cast<float>(std::min(ys + 1.0, y1) - std::max(static_cast<double>(ys), y0));
    for (int xs = static_cast<int>(std::floor(x0)); xs < static_cast<int>(std::ceil(x1)); ++xs)
      acc += wy *
             static_cast<float>(std::min(xs + 1.0, x1) - std::max(static_cast<double>(xs), x0)) *
             p.row(ys)[xs * p.channels + ch];
  }
  return acc * static_cast<float>(1.0 / ((x1 - x0) * (y1 - y0)));
}

}  // namespace

namespace {
// Each pixel's Y, and its Cb, Cr by the siting rule (upsample_chroma) from `chroma(k, j, uv)`.
template <class Luma, class Chroma>
void to_rgb(const PlaneView& y, const PlaneView& rgb, int cw, int ch, ColorSpec spec, Luma luma,
            Chroma chroma) {
  const ColorCoefs c = color_coefs(spec);
  const ChromaOffset o = chroma_offset(spec.siting);
  for (int yy = 0; yy < y.height; ++yy)
    for (int x = 0; x < y.width; ++x) {
      float uv[2], r, g, b;
      upsample_chroma(static_cast<float>(x), static_cast<float>(yy), cw, ch, o, chroma, uv);
      yuv_to_rgb(c, luma(x, yy), uv[0], uv[1], r, g, b);
      put_rgb(rgb, x, yy, r, g, b);
    }
}
}  // namespace

void nv12_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec) {
  detail::expect_420(y, uv, rgb, 2);
  to_rgb(
      y, rgb, uv.width, uv.height, spec, [&](int x, int yy) -> float { return y.row(yy)[x]; },
      [&](int k, int j, float(&c)[2]) {
        c[0] = uv.row(j)[2 * k];
        c[1] = uv.row(j)[2 * k + 1];
      });
}

void yuv420p_to_rgb(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                    const PlaneView& rgb, ColorSpec spec) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  to_rgb(
      y, rgb, u.width, u.height, spec, [&](int x, int yy) -> float { return y.row(yy)[x]; },
      [&](int k, int j, float(&c)[2]) {
        c[0] = u.row(j)[k];
        c[1] = v.row(j)[k];
      });
}

namespace {
// Writes Y for every pixel and each chroma sample by the siting rule (downsample_chroma)
// through `put_c`.
template <class PutC>
void rgb_to_420(const PlaneView& rgb, const PlaneView& y, ColorSpec spec, PutC put_c) {
  const ColorCoefs c = color_coefs(spec);
  const ChromaOffset o = chroma_offset(spec.siting);
  for (int yy = 0; yy < y.height; ++yy)
    for (int x = 0; x < y.width; ++x) {
      const std::uint8_t* p = rgb.row(yy) + x * rgb.channels;
      float fy, fu, fv;
      rgb_to_yuv(c, p[0], p[1], p[2], fy, fu, fv);
      y.row(yy)[x] = clamp_u8(fy);
    }
  auto pixel_uv = [&](int x, int yy, float(&uv)[2]) {
    const std::uint8_t* p =
        rgb.row(std::clamp(yy, 0, y.height - 1)) + std::clamp(x, 0, y.width - 1) * rgb.channels;
    float fy;
    rgb_to_yuv(c, p[0], p[1], p[2], fy, uv[0], uv[1]);
  };
  for (int cy = 0; cy < (y.height + 1) / 2; ++cy)
    for (int cx = 0; cx < (y.width + 1) / 2; ++cx) {
      float uv[2];
      downsample_chroma(cx, cy, o, pixel_uv, uv);
      put_c(cx, cy, clamp_u8(uv[0]), clamp_u8(uv[1]));
    }
}
}  // namespace

void rgb_to_nv12(const PlaneView& rgb, const PlaneView& y, const PlaneView& uv, ColorSpec spec) {
  detail::expect_420(y, uv, rgb, 2);
  rgb_to_420(rgb, y, spec, [&](int cx, int cy, std::uint8_t u, std::uint8_t v) {
    uv.row(cy)[2 * cx] = u;
    uv.row(cy)[2 * cx + 1] = v;
  });
}

void rgb_to_yuv420p(const PlaneView& rgb, const PlaneView& y, const PlaneView& u,
                    const PlaneView& v, ColorSpec spec) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  rgb_to_420(rgb, y, spec, [&](int cx, int cy, std::uint8_t cu, std::uint8_t cv) {
    u.row(cy)[cx] = cu;
    v.row(cy)[cx] = cv;
  });
}

void nv12_resize_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb,
                        ColorSpec spec, Interp interp) {
  detail::expect_nv12_to_any_rgb(y, uv, rgb);
  const ColorCoefs c = color_coefs(spec);
  const ChromaOffset o = chroma_offset(spec.siting);
  const float sx = static_cast<float>(y.width) / rgb.width,
              sy = static_cast<float>(y.height) / rgb.height;
  const double dsx = static_cast<double>(y.width) / rgb.width,
               dsy = static_cast<double>(y.height) / rgb.height;
  const double dcsx = static_cast<double>(uv.width) / rgb.width,
               dcsy = static_cast<double>(uv.height) / rgb.height;
  // Chroma shrinks by area where the luma footprint is two chroma samples or more.
  const bool y_area = interp == Interp::kArea && dsx >= 1 && dsy >= 1;
  const bool c_area = interp == Interp::kArea && dsx >= 2 && dsy >= 2;
  auto chroma_at = [&](int k, int j, float(&s)[2]) {
    s[0] = uv.row(j)[2 * k];
    s[1] = uv.row(j)[2 * k + 1];
  };
  for (int yy = 0; yy < rgb.height; ++yy)
    for (int x = 0; x < rgb.width; ++x) {
      float fy, fc[2];
      if (interp == Interp::kNearest) {
        fy = sample_nearest(y, x, yy, dsx, dsy, 0);
        fc[0] = sample_nearest(uv, x, yy, dcsx, dcsy, 0);
        fc[1] = sample_nearest(uv, x, yy, dcsx, dcsy, 1);
      } else {
        fy = y_area ? sample_area(y, x, yy, dsx, dsy, 0)
                    : sample_bilinear(y, (x + 0.5f) * sx - 0.5f, (yy + 0.5f) * sy - 0.5f, 0);
        if (c_area)
          for (int k = 0; k < 2; ++k)
            fc[k] = sample_area(uv, x, yy, dsx / 2, dsy / 2, k, chroma_area_shift(o.x),
                                chroma_area_shift(o.y));
        else
          upsample_chroma((x + 0.5f) * sx - 0.5f, (yy + 0.5f) * sy - 0.5f, uv.width, uv.height, o,
                          chroma_at, fc);
      }
      float r, g, b;
      yuv_to_rgb(c, fy, fc[0], fc[1], r, g, b);
      put_rgb(rgb, x, yy, r, g, b);
    }
}

void make_eq_lut(double brightness, double contrast, double gamma, std::uint8_t (&lut)[256]) {
  VPIPE_EXPECTS(gamma > 0 && contrast >= 0, "eq: gamma > 0 and contrast >= 0");
  for (int v = 0; v < 256; ++v) {
    double x = (v / 255.0 - 0.5) * contrast + 0.5 + brightness;
    x = std::clamp(x, 0.0, 1.0);
    x = std::pow(x, 1.0 / gamma);
    lut[v] = static_cast<std::uint8_t>(std::lround(255.0 * x));
  }
}

void lut_plane(const PlaneView& src, const PlaneView& dst, const std::uint8_t (&lut)[256]) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "lut_plane: planes differ in size");
  for (int yy = 0; yy < src.height; ++yy)
    for (std::size_t i = 0; i < src.row_bytes(); ++i) dst.row(yy)[i] = lut[src.row(yy)[i]];
}

}  // namespace vpipe::ref

// ---- more filters (see reference.hpp) ------------------------------------------
#include <opencv2/imgproc.hpp>

namespace vpipe::ref {

void box_blur_plane(const PlaneView& src, const PlaneView& dst, int radius) {
  VPIPE_EXPECTS(radius >= 1 && src.width == dst.width && src.height == dst.height,
                "box_blur: radius >= 1, planes of one size");
  cv::Mat f;
  as_mat(src).convertTo(f, CV_32F);
  cv::blur(f, f, cv::Size(2 * radius + 1, 2 * radius + 1), cv::Point(-1, -1),
           cv::BORDER_REFLECT_101);
  cv::Mat out = as_mat(dst);
  f.convertTo(out, out.type());
}

void unsharp_plane(const PlaneView& src, const PlaneView& dst, double sigma, double amount) {
  VPIPE_EXPECTS(sigma > 0 && src.width == dst.width && src.height == dst.height,
                "unsharp: sigma > 0, planes of one size");
  const int r = static_cast<int>(std::ceil(3.0 * sigma));
  cv::Mat f, b;
  as_mat(src).convertTo(f, CV_32F);
  cv::GaussianBlur(f, b, cv::Size(2 * r + 1, 2 * r + 1), sigma, sigma, cv::BORDER_REFLECT_101);
  cv::Mat sharp = f + static_cast<float>(amount) * (f - b);
  cv::Mat out = as_mat(dst);
  sharp.convertTo(out, out.type());
}

void sobel_plane(const PlaneView& src, const PlaneView& dst) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "sobel: planes of one size");
  cv::Mat gx, gy;
  cv::Sobel(as_mat(src), gx, CV_32F, 1, 0, 3, 1, 0, cv::BORDER_REFLECT_101);
  cv::Sobel(as_mat(src), gy, CV_32F, 0, 1, 3, 1, 0, cv::BORDER_REFLECT_101);
  cv::Mat mag;
  cv::sqrt(gx.mul(gx) + gy.mul(gy), mag);
  cv::Mat out = as_mat(dst);
  mag.convertTo(out, out.type());
}

void pad_plane(const PlaneView& src, const PlaneView& dst, int x, int y, std::uint8_t fill) {
  detail::expect_pad(src, dst, x, y);
  fill_plane(dst, fill);
  as_mat(src).copyTo(as_mat(dst)(cv::Rect(x, y, src.width, src.height)));
}

void overlay_rgba(const PlaneView& base, const PlaneView& overlay, const PlaneView& dst, int x,
                  int y, float opacity) {
  detail::expect_overlay(base, overlay, dst);
  for (int yy = 0; yy < dst.height; ++yy)
    for (int xx = 0; xx < dst.width; ++xx) {
      const int ox = xx - x, oy = yy - y;
      const bool inside = ox >= 0 && oy >= 0 && ox < overlay.width && oy < overlay.height;
      overlay_pixel(base.row(yy) + xx * base.channels, inside ? overlay.row(oy) + ox * 4 : nullptr,
                    dst.row(yy) + xx * dst.channels, dst.channels, opacity);
    }
}

void p010_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec) {
  detail::expect_p010(y, uv, rgb);
  const ColorCoefs c = color_coefs(spec);
  to_rgb(
      y, rgb, uv.width, uv.height, spec,
      [&](int x, int yy) { return p010_luma(c, p010_word(y.row(yy) + 2 * x)); },
      [&](int k, int j, float(&s)[2]) {
        const std::uint8_t* p = uv.row(j) + 4 * k;
        s[0] = p010_chroma(c, p010_word(p));
        s[1] = p010_chroma(c, p010_word(p + 2));
      });
}

void narrow_plane(const PlaneView& src, const PlaneView& dst, int depth, int shift) {
  detail::expect_narrow(src, dst, depth, shift);
  const int down = depth - 8;
  const unsigned half = 1u << (down - 1), mask = (1u << depth) - 1;
  for (int y = 0; y < dst.height; ++y)
    for (int x = 0; x < dst.width * dst.channels; ++x) {
      const std::uint8_t* p = src.row(y) + 2 * x;
      const unsigned v =
          ((static_cast<unsigned>(p[0]) | static_cast<unsigned>(p[1]) << 8) >> shift) & mask;
      dst.row(y)[x] = static_cast<std::uint8_t>(std::min(255u, (v + half) >> down));
    }
}

}  // namespace vpipe::ref
