// The colour references on the CPU: anchor values, agreement with OpenCV's
// BT.601 NV12 conversion, round trips, the eq table.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>
#include <random>

#include "vpipe/kernels/reference.hpp"

using namespace vpipe;

namespace {
struct Img {
  std::vector<std::uint8_t> b;
  PlaneView v;
  Img(int w, int h, int ch, std::uint8_t fill = 0) : b(static_cast<std::size_t>(w * h * ch), fill) {
    v = {b.data(), w, h, ch, static_cast<std::size_t>(w * ch)};
  }
};
}  // namespace

TEST(ColorReference, AnchorValues) {
  Img y(2, 2, 1, 16), uv(1, 1, 2, 128), rgb(2, 2, 3, 7);
  ref::nv12_to_rgb(y.v, uv.v, rgb.v, {ColorMatrix::kBT709, ColorRange::kLimited});
  EXPECT_EQ(rgb.b[0], 0);
  EXPECT_EQ(rgb.b[5], 0);
  y.b.assign(4, 235);
  ref::nv12_to_rgb(y.v, uv.v, rgb.v, {ColorMatrix::kBT601, ColorRange::kLimited});
  EXPECT_EQ(rgb.b[0], 255);
  EXPECT_EQ(rgb.b[1], 255);
  y.b.assign(4, 255);
  ref::nv12_to_rgb(y.v, uv.v, rgb.v, {ColorMatrix::kBT709, ColorRange::kFull});
  EXPECT_EQ(rgb.b[2], 255);
  // Pure red in BT.709 limited: Y 63, Cb 102, Cr 240 (rounded).
  Img red(2, 2, 3), yo(2, 2, 1), uvo(1, 1, 2);
  for (int i = 0; i < 4; ++i) red.b[static_cast<std::size_t>(3 * i)] = 255;
  ref::rgb_to_nv12(red.v, yo.v, uvo.v, {ColorMatrix::kBT709, ColorRange::kLimited});
  EXPECT_EQ(yo.b[0], 63);
  EXPECT_EQ(uvo.b[0], 102);
  EXPECT_EQ(uvo.b[1], 240);
}

// OpenCV repeats each chroma sample over its 2×2 block (no siting): on flat chroma planes the
// siting cannot matter, and the matrix is all that differs.
TEST(ColorReference, Bt601LimitedAgreesWithOpenCv) {
  const int w = 64, h = 32;
  std::mt19937 rng(3);
  for (int round = 0; round < 8; ++round) {
    cv::Mat nv12(h * 3 / 2, w, CV_8UC1);
    for (int i = 0; i < w * h; ++i) nv12.data[i] = static_cast<std::uint8_t>(16 + rng() % 220);
    const auto cb = static_cast<std::uint8_t>(16 + rng() % 225),
               cr = static_cast<std::uint8_t>(16 + rng() % 225);
    for (int i = w * h; i < w * h * 3 / 2; i += 2) nv12.data[i] = cb, nv12.data[i + 1] = cr;
    cv::Mat cv_rgb;
    cv::cvtColor(nv12, cv_rgb, cv::COLOR_YUV2RGB_NV12);
    Img rgb(w, h, 3);
    PlaneView y{nv12.data, w, h, 1, static_cast<std::size_t>(w)};
    PlaneView uv{nv12.data + w * h, w / 2, h / 2, 2, static_cast<std::size_t>(w)};
    ref::nv12_to_rgb(y, uv, rgb.v, {ColorMatrix::kBT601, ColorRange::kLimited});
    int worst = 0;
    for (int i = 0; i < w * h * 3; ++i)
      worst =
          std::max(worst, std::abs(int(rgb.b[static_cast<std::size_t>(i)]) - int(cv_rgb.data[i])));
    EXPECT_LE(worst, 2) << "OpenCV rounds its fixed-point coefficients differently";
  }
}

TEST(ColorReference, FullRangeRoundTripIsClose) {
  const int w = 32, h = 16;
  Img rgb(w, h, 3), y(w, h, 1), uv(w / 2, h / 2, 2), back(w, h, 3);
  for (int yy = 0; yy < h; ++yy)  // smooth: 4:2:0 loses little
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        rgb.b[static_cast<std::size_t>((yy * w + x) * 3 + c)] =
            static_cast<std::uint8_t>(x * 4 + yy * 3 + c * 20);
  ref::rgb_to_nv12(rgb.v, y.v, uv.v, {ColorMatrix::kBT709, ColorRange::kFull});
  ref::nv12_to_rgb(y.v, uv.v, back.v, {ColorMatrix::kBT709, ColorRange::kFull});
  EXPECT_GT(ref::psnr(rgb.v, back.v), 40.0);
}

TEST(ColorReference, EqLutIdentityAndExtremes) {
  std::uint8_t lut[256];
  ref::make_eq_lut(0, 1, 1, lut);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(lut[i], i);
  ref::make_eq_lut(1, 1, 1, lut);
  EXPECT_EQ(lut[0], 255);
  ref::make_eq_lut(0, 0, 1, lut);
  EXPECT_EQ(lut[0], 128);
  EXPECT_EQ(lut[255], 128);
  ref::make_eq_lut(0, 1, 2, lut);
  EXPECT_GT(lut[64], 64) << "gamma > 1 brightens mid-tones";
}

TEST(ColorReference, FusedResizeAtSameSizeIsNearTheSeparateSteps) {
  const int w = 16, h = 8;
  Img y(w, h, 1, 100), uv(w / 2, h / 2, 2, 128), a(w, h, 4), b(w, h, 4);
  ref::nv12_resize_to_rgb(y.v, uv.v, a.v, {});
  ref::nv12_to_rgb(y.v, uv.v, b.v, {});
  for (std::size_t i = 0; i < a.b.size(); ++i)
    ASSERT_EQ(a.b[i], b.b[i]) << "flat chroma: identical";
}

// The fused pass samples luma as resize_plane does, per interpolation: on a
// noise luma plane with neutral chroma, fused ≈ resize_plane (OpenCV) then
// nv12_to_rgb, within the resized samples' rounding (0.5 × 1.164 before the
// final rounding). Sampling with the wrong method differs by tens of LSB on
// noise.
TEST(ColorReference, FusedResizeSamplesLumaAsResizePlane) {
  const int w = 96, h = 54;
  Img y(w, h, 1), uv(w / 2, h / 2, 2, 128);
  std::mt19937 rng(9);
  for (auto& b : y.b) b = static_cast<std::uint8_t>(16 + rng() % 220);
  const std::pair<ref::Interp, std::pair<int, int>> cases[] = {
      {ref::Interp::kArea, {60, 34}},      {ref::Interp::kArea, {48, 27}},
      {ref::Interp::kArea, {32, 18}},      {ref::Interp::kBilinear, {60, 34}},
      {ref::Interp::kBilinear, {150, 80}}, {ref::Interp::kNearest, {60, 34}}};
  for (const auto& [interp, size] : cases) {
    const auto [ow, oh] = size;
    Img fused(ow, oh, 3), split(ow, oh, 3), ys(ow, oh, 1), uvs((ow + 1) / 2, (oh + 1) / 2, 2, 128);
    ref::nv12_resize_to_rgb(y.v, uv.v, fused.v, {}, interp);
    ref::resize_plane(y.v, ys.v, interp);
    ref::nv12_to_rgb(ys.v, uvs.v, split.v, {});
    int worst = 0;
    for (std::size_t i = 0; i < fused.b.size(); ++i)
      worst = std::max(worst, std::abs(fused.b[i] - split.b[i]));
    EXPECT_LE(worst, interp == ref::Interp::kNearest ? 0 : 1)
        << ow << "x" << oh << " interp " << static_cast<int>(interp);
  }
}

TEST(FilterReference, SobelBoxPadOverlayAgainstPlainLoops) {
  const int w = 9, h = 7;
  Img src(w, h, 1);
  std::mt19937 rng(5);
  for (auto& b : src.b) b = static_cast<std::uint8_t>(rng());
  auto at = [&](int x, int y) {
    auto refl = [](int i, int n) { return i < 0 ? -i : i >= n ? 2 * n - 2 - i : i; };
    return static_cast<int>(src.b[static_cast<std::size_t>(refl(y, h) * w + refl(x, w))]);
  };
  Img sob(w, h, 1), box(w, h, 1);
  ref::sobel_plane(src.v, sob.v);
  ref::box_blur_plane(src.v, box.v, 1);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int gx = at(x + 1, y - 1) + 2 * at(x + 1, y) + at(x + 1, y + 1) - at(x - 1, y - 1) -
                     2 * at(x - 1, y) - at(x - 1, y + 1);
      const int gy = at(x - 1, y + 1) + 2 * at(x, y + 1) + at(x + 1, y + 1) - at(x - 1, y - 1) -
                     2 * at(x, y - 1) - at(x + 1, y - 1);
      const double mag = std::min(255.0, std::sqrt(double(gx * gx + gy * gy)));
      ASSERT_LE(std::abs(sob.b[static_cast<std::size_t>(y * w + x)] - mag), 0.5 + 1e-9)
          << x << "," << y;
      int sum = 0;
      for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) sum += at(x + i, y + j);
      ASSERT_LE(std::abs(box.b[static_cast<std::size_t>(y * w + x)] - sum / 9.0), 0.5 + 1e-6);
    }
  Img canvas(w + 2, h + 2, 1, 7);
  ref::pad_plane(src.v, canvas.v, 1, 1, 16);
  EXPECT_EQ(canvas.b[0], 16);
  EXPECT_EQ(canvas.b[static_cast<std::size_t>((w + 2) + 1)], src.b[0]);
  // Overlay: opaque white at full opacity replaces, alpha 0 keeps.
  Img base(2, 1, 3, 10), mark(2, 1, 4, 255), out(2, 1, 3);
  mark.b[7] = 0;  // second pixel transparent
  ref::overlay_rgba(base.v, mark.v, out.v, 0, 0, 1.0f);
  EXPECT_EQ(out.b[0], 255);
  EXPECT_EQ(out.b[3], 10);
}

TEST(FilterReference, P010AnchorsMatchTheEightBitPath) {
  // 10-bit limited black (64) and white (940) in the high bits of 16-bit samples.
  Img y(2, 2, 2), uv(1, 1, 4), rgb(2, 2, 3);
  auto put16 = [](std::uint8_t* p, int v10) {
    const int v = v10 << 6;
    p[0] = static_cast<std::uint8_t>(v & 0xff);
    p[1] = static_cast<std::uint8_t>(v >> 8);
  };
  for (int i = 0; i < 4; ++i) put16(y.b.data() + 2 * i, 64);
  put16(uv.b.data(), 512);
  put16(uv.b.data() + 2, 512);
  ref::p010_to_rgb(y.v, uv.v, rgb.v, {ColorMatrix::kBT709, ColorRange::kLimited});
  EXPECT_EQ(rgb.b[0], 0);
  for (int i = 0; i < 4; ++i) put16(y.b.data() + 2 * i, 940);
  ref::p010_to_rgb(y.v, uv.v, rgb.v, {ColorMatrix::kBT709, ColorRange::kLimited});
  EXPECT_EQ(rgb.b[0], 255);
  EXPECT_EQ(rgb.b[11], 255);
}
