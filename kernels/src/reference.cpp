#include "vpipe/kernels/reference.hpp"
#include "as_mat.hpp"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "vpipe/base/errors.hpp"

namespace vpipe::ref {

cv::Mat as_mat(const PlaneView& plane) {
  VPIPE_EXPECTS(plane.channels >= 1 && plane.channels <= 4, "plane channels must be 1..4");
  return {plane.height, plane.width, CV_8UC(plane.channels), plane.data, plane.pitch};
}

void copy_plane(const PlaneView& src, const PlaneView& dst) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "copy_plane: planes differ in size");
  as_mat(src).copyTo(as_mat(dst));
}

void deinterlace_plane(const PlaneView& src, const PlaneView& dst, bool keep_top) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "deinterlace_plane: planes differ in size");
  const int h = src.height, keep = keep_top ? 0 : 1;
  const std::size_t n = src.row_bytes();
  auto kept = [&](int y) { return y >= 0 && y < h ? src.row(y) : nullptr; };
  for (int y = 0; y < h; ++y) {
    std::uint8_t* out = dst.row(y);
    if (y % 2 == keep) {
      std::copy_n(src.row(y), n, out);
      continue;
    }
    const std::uint8_t *a = kept(y - 3), *c = kept(y - 1), *e = kept(y + 1), *g = kept(y + 3);
    if (!c || !e) {  // the first or last row: the kept row beside it (a 1-row picture: its own)
      std::copy_n(c ? c : e ? e : src.row(y), n, out);
      continue;
    }
    for (std::size_t x = 0; x < n; ++x) {
      const int ce = c[x] + e[x];
      const int v = a && g ? (5077 * ce - 981 * (a[x] + g[x]) + 4096) >> 13 : (ce + 1) >> 1;
      out[x] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
    }
  }
}

void fill_plane(const PlaneView& dst, std::uint8_t value) {
  as_mat(dst).setTo(cv::Scalar::all(value));
}

void resize_plane(const PlaneView& src, const PlaneView& dst, Interp interp) {
  VPIPE_EXPECTS(src.channels == dst.channels, "resize_plane: channel counts differ");
  const int flag = interp == Interp::kNearest ? cv::INTER_NEAREST
                   : interp == Interp::kArea  ? cv::INTER_AREA
                                              : cv::INTER_LINEAR;
  cv::Mat out = as_mat(dst);
  cv::resize(as_mat(src), out, out.size(), 0, 0, flag);
}

namespace {
int reflect101(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
  return i;
}

// Exact separable convolution in double, for kernels wider than the image.
void gaussian_blur_exact(const PlaneView& src, const PlaneView& dst, double sigma, int radius) {
  std::vector<double> k(static_cast<std::size_t>(2 * radius + 1));
  double sum = 0;
  for (int i = -radius; i <= radius; ++i)
    sum += k[static_cast<std::size_t>(i + radius)] = std::exp(-(i * i) / (2 * sigma * sigma));
  for (auto& v : k) v /= sum;
  const int ch = src.channels;
  std::vector<double> tmp(src.row_bytes() * static_cast<std::size_t>(src.height));
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x)
      for (int c = 0; c < ch; ++c) {
        double acc = 0;
        for (int i = -radius; i <= radius; ++i)
          acc += k[static_cast<std::size_t>(i + radius)] *
                 src.row(y)[reflect101(x + i, src.width) * ch + c];
        tmp[(static_cast<std::size_t>(y) * src.width + x) * ch + c] = acc;
      }
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x)
      for (int c = 0; c < ch; ++c) {
        double acc = 0;
        for (int i = -radius; i <= radius; ++i)
          acc +=
              k[static_cast<std::size_t>(i + radius)] *
              tmp[(static_cast<std::size_t>(reflect101(y + i, src.height)) * src.width + x) * ch +
                  c];
        dst.row(y)[x * ch + c] = static_cast<std::uint8_t>(std::clamp(std::lround(acc), 0L, 255L));
      }
}
}  // namespace

void gaussian_blur_plane(const PlaneView& src, const PlaneView& dst, double sigma) {
  VPIPE_EXPECTS(sigma > 0, "gaussian_blur_plane: sigma must be > 0");
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height, "blur: planes differ in size");
  const int radius = static_cast<int>(std::ceil(3.0 * sigma));
  // OpenCV's fixed-point path strays up to 2 LSB from the exact result when
  // the kernel is wider than the image (seen at 2x2, sigma 4): be exact there.
  if (2 * radius + 1 > std::min(src.width, src.height)) {
    VPIPE_EXPECTS(src.data != dst.data, "blur: not in place");
    gaussian_blur_exact(src, dst, sigma, radius);
    return;
  }
  // In float: OpenCV's 8-bit fixed-point Gaussian strays up to 2 LSB from the
  // exact result for wide kernels (seen at sigma 4); the float path does not.
  cv::Mat f;
  as_mat(src).convertTo(f, CV_32F);
  cv::GaussianBlur(f, f, cv::Size(2 * radius + 1, 2 * radius + 1), sigma, sigma,
                   cv::BORDER_REFLECT_101);
  cv::Mat out = as_mat(dst);
  f.convertTo(out, out.type());
}

void flip_plane(const PlaneView& src, const PlaneView& dst, bool horizontal, bool vertical) {
  cv::Mat out = as_mat(dst);
  if (!horizontal && !vertical) {
    if (src.data != dst.data) as_mat(src).copyTo(out);
    return;
  }
  const int code = horizontal && vertical ? -1 : horizontal ? 1 : 0;
  cv::flip(as_mat(src), out, code);
}

void invert_plane(const PlaneView& src, const PlaneView& dst) {
  cv::Mat out = as_mat(dst);
  cv::bitwise_not(as_mat(src), out);
}

void interleave_uv(const PlaneView& u, const PlaneView& v, const PlaneView& uv) {
  VPIPE_EXPECTS(u.width == uv.width && v.width == uv.width && u.height == uv.height &&
                    v.height == uv.height && uv.channels == 2 && u.channels == 1 && v.channels == 1,
                "interleave_uv: U and V planes of the UV plane's size");
  cv::Mat out = as_mat(uv);
  cv::merge(std::vector<cv::Mat>{as_mat(u), as_mat(v)}, out);
}

void crop_plane(const PlaneView& src, const PlaneView& dst, int x, int y) {
  VPIPE_EXPECTS(x >= 0 && y >= 0 && x + dst.width <= src.width && y + dst.height <= src.height,
                "crop_plane: rectangle outside the source");
  as_mat(src)(cv::Rect(x, y, dst.width, dst.height)).copyTo(as_mat(dst));
}

void pad_plane(const PlaneView& src, const PlaneView& dst) {
  VPIPE_EXPECTS(dst.width >= src.width && dst.height >= src.height && dst.channels == src.channels,
                "pad_plane: the destination is smaller than the source");
  cv::Mat out = as_mat(dst);
  cv::copyMakeBorder(as_mat(src), out, 0, dst.height - src.height, 0, dst.width - src.width,
                     cv::BORDER_REPLICATE);
}

double psnr(const PlaneView& a, const PlaneView& b) {
  VPIPE_EXPECTS(a.width == b.width && a.height == b.height && a.channels == b.channels,
                "psnr: planes differ in size");
  const double mse_sum = cv::norm(as_mat(a), as_mat(b), cv::NORM_L2SQR);
  const double n = static_cast<double>(a.width) * a.height * a.channels;
  if (mse_sum == 0) return INFINITY;
  return 10.0 * std::log10(255.0 * 255.0 / (mse_sum / n));
}

}  // namespace vpipe::ref
