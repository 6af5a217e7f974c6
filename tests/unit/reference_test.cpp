// The CPU references against independent, plain-loop computations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "vpipe/kernels/reference.hpp"

using namespace vpipe;

namespace {
struct Image {
  std::vector<std::uint8_t> bytes;
  PlaneView view;
  Image(int w, int h, int ch = 1, int pad = 0, std::uint32_t seed = 0, std::uint8_t fill = 0xCD) {
    const std::size_t pitch = static_cast<std::size_t>(w * ch + pad);
    bytes.assign(pitch * static_cast<std::size_t>(h), fill);  // poisoned
    view = {bytes.data(), w, h, ch, pitch};
    if (seed) {
      std::mt19937 rng(seed);
      for (int y = 0; y < h; ++y)
        for (std::size_t x = 0; x < view.row_bytes(); ++x)
          view.row(y)[x] = static_cast<std::uint8_t>(rng());
    }
  }
  std::uint8_t at(int x, int y, int c = 0) const { return view.row(y)[x * view.channels + c]; }
};
const int kShapes[][2] = {{1, 1}, {2, 2}, {7, 5}, {33, 17}, {64, 64}, {65, 3}, {129, 66}};
}  // namespace

TEST(Reference, InvertFlipCropMatchPlainLoops) {
  for (auto [w, h] : kShapes) {
    for (int ch : {1, 2}) {
      Image src(w, h, ch, 3, 7u + static_cast<unsigned>(w)), inv(w, h, ch, 1), fl(w, h, ch, 5);
      ref::invert_plane(src.view, inv.view);
      ref::flip_plane(src.view, fl.view, true, true);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int c = 0; c < ch; ++c) {
            ASSERT_EQ(inv.at(x, y, c), 255 - src.at(x, y, c));
            ASSERT_EQ(fl.at(x, y, c), src.at(w - 1 - x, h - 1 - y, c)) << "pixels move as wholes";
          }
      if (w > 2 && h > 3) {
        Image cr(w - 2, h - 3, ch);
        ref::crop_plane(src.view, cr.view, 1, 2);
        for (int y = 0; y < h - 3; ++y)
          for (int x = 0; x < w - 2; ++x)
            for (int c = 0; c < ch; ++c) ASSERT_EQ(cr.at(x, y, c), src.at(x + 1, y + 2, c));
      }
    }
  }
}

TEST(Reference, GaussianBlurMatchesDirectConvolution) {
  for (const double sigma : {0.5, 1.5, 4.0}) {
    const int r = static_cast<int>(std::ceil(3 * sigma));
    std::vector<double> k(static_cast<std::size_t>(2 * r + 1));
    double sum = 0;
    for (int i = -r; i <= r; ++i)
      sum += k[static_cast<std::size_t>(i + r)] = std::exp(-i * i / (2 * sigma * sigma));
    for (auto& v : k) v /= sum;
    auto reflect = [](int i, int n) {
      if (n == 1) return 0;
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
      return i;
    };
    for (auto [w, h] : kShapes) {
      for (int ch : {1, 2}) {
        Image src(w, h, ch, 0, 41), dst(w, h, ch, 4);
        ref::gaussian_blur_plane(src.view, dst.view, sigma);
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x)
            for (int c = 0; c < ch; ++c) {
              double acc = 0;
              for (int j = -r; j <= r; ++j)
                for (int i = -r; i <= r; ++i)
                  acc += k[static_cast<std::size_t>(i + r)] * k[static_cast<std::size_t>(j + r)] *
                         src.at(reflect(x + i, w), reflect(y + j, h), c);
              ASSERT_LE(std::abs(dst.at(x, y, c) - std::lround(acc)), 1)
                  << "±1 LSB of the rounded exact value, " << w << "x" << h << "x" << ch << " at "
                  << x << "," << y << " sigma " << sigma;
            }
      }
    }
  }
}

TEST(Reference, ResizeAreaAveragesExactBlocksAndBilinearKeepsConstants) {
  Image src(8, 4, 1, 2, 5), half(4, 2, 1, 3);
  ref::resize_plane(src.view, half.view, ref::Interp::kArea);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 4; ++x) {
      const int s = src.at(2 * x, 2 * y) + src.at(2 * x + 1, 2 * y) + src.at(2 * x, 2 * y + 1) +
                    src.at(2 * x + 1, 2 * y + 1);
      EXPECT_NEAR(half.at(x, y), s / 4.0, 0.5 + 1e-9);
    }
  Image flat(5, 3, 2, 0, 0, 77), big(13, 9, 2, 1);
  ref::resize_plane(flat.view, big.view, ref::Interp::kBilinear);
  for (int y = 0; y < 9; ++y)
    for (int x = 0; x < 13; ++x) ASSERT_EQ(big.at(x, y, 1), 77);
}

TEST(Reference, PsnrOfKnownError) {
  Image a(16, 16, 1, 0, 0, 100), b(16, 16, 1, 0, 0, 110);
  EXPECT_NEAR(ref::psnr(a.view, b.view), 10 * std::log10(255.0 * 255.0 / 100.0), 1e-9);
  EXPECT_TRUE(std::isinf(ref::psnr(a.view, a.view)));
}

// ---- stamps (glass-to-glass latency) ----------------------------------------

#include "vpipe/pipeline/filters/stamp.hpp"

TEST(Stamp, WrittenAndReadBackAlsoAfterADownscaleAndNotFoundInNoise) {
  std::vector<std::uint8_t> big(1280 * 720, 90), small(320 * 180, 0);
  vpipe::PlaneView b{big.data(), 1280, 720, 1, 1280}, s{small.data(), 320, 180, 1, 320};
  const std::uint64_t t = 0x0000123456789ABCull;
  vpipe::write_stamp(b, t);
  ASSERT_EQ(vpipe::read_stamp(b), t);
  // A 4× box downscale (what resize does): cells are 5 px now.
  for (int y = 0; y < 180; ++y)
    for (int x = 0; x < 320; ++x) {
      int sum = 0;
      for (int dy = 0; dy < 4; ++dy)
        for (int dx = 0; dx < 4; ++dx)
          sum += big[static_cast<std::size_t>((4 * y + dy) * 1280 + 4 * x + dx)];
      small[static_cast<std::size_t>(y * 320 + x)] = static_cast<std::uint8_t>(sum / 16);
    }
  EXPECT_EQ(vpipe::read_stamp(s), t);
  // A picture without a stamp: the 16-bit check rejects it.
  std::mt19937 rng(3);
  int found = 0;
  for (int i = 0; i < 200; ++i) {
    for (int y = 0; y < 40; ++y)  // the stamp's rows are all it reads
      for (int x = 0; x < 1280; ++x)
        big[static_cast<std::size_t>(y * 1280 + x)] = static_cast<std::uint8_t>(rng());
    found += vpipe::read_stamp(b).has_value();
  }
  EXPECT_EQ(found, 0);
  EXPECT_EQ(vpipe::stamp_age_ns(1000, 3000), 2'000'000);
  EXPECT_EQ(vpipe::stamp_age_ns(3000, 1000), -2'000'000) << "clock skew shows as negative";
  EXPECT_EQ(vpipe::stamp_age_ns((1ull << 48) - 1, 1), 2'000) << "across the 2^48 wrap";
}

// deinterlace_plane keeps one field's rows as they are and makes the other's from it:
// a comb (the fields far apart, as motion leaves them) comes out as the kept field alone,
// a vertical ramp and a flat plane come out as they went in, and bwdif's four-tap sum is
// checked on random rows against the formula worked here.
TEST(Reference, DeinterlaceKeepsOneFieldAndRebuildsTheOther) {
  for (auto [w, h] : kShapes) {
    for (const bool keep_top : {true, false}) {
      Image comb(w, h, 1, 2), out(w, h, 1, 3);
      for (int y = 0; y < h; ++y)
        std::fill_n(comb.view.row(y), w, static_cast<std::uint8_t>(y % 2 ? 235 : 16));
      ref::deinterlace_plane(comb.view, out.view, keep_top);
      // A picture of one row, its bottom field asked for, has no other row: it stays.
      const int kept = keep_top || h == 1 ? 16 : 235;
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) ASSERT_EQ(out.at(x, y), kept) << w << "x" << h << " y " << y;
      }
    }
  }
  Image ramp(8, 16, 1, 1), flat(8, 16, 1, 0, 0, 77), out(8, 16, 1, 2), out2(8, 16, 1, 2);
  for (int y = 0; y < 16; ++y) std::fill_n(ramp.view.row(y), 8, static_cast<std::uint8_t>(10 * y));
  ref::deinterlace_plane(ramp.view, out.view, true);
  ref::deinterlace_plane(flat.view, out2.view, false);
  for (int y = 0; y < 15; ++y) {  // row 15 (bottom field, last) copies row 14
    EXPECT_EQ(out.at(3, y), 10 * y) << "ramp row " << y;
    EXPECT_EQ(out2.at(3, y), 77) << "flat row " << y;
  }
  Image noise(5, 12, 1, 0, 99u), mixed(5, 12, 1, 0);
  ref::deinterlace_plane(noise.view, mixed.view, true);
  for (int x = 0; x < 5; ++x) {  // row 5: kept rows 2, 4 above, 6, 8 below
    const double sum =
        5077.0 * (noise.at(x, 4) + noise.at(x, 6)) - 981.0 * (noise.at(x, 2) + noise.at(x, 8));
    EXPECT_EQ(mixed.at(x, 5),
              std::clamp<int>(static_cast<int>(std::floor(sum / 8192 + 0.5)), 0, 255));
    EXPECT_EQ(mixed.at(x, 1), (noise.at(x, 0) + noise.at(x, 2) + 1) / 2) << "row 1: no row 4 above";
    EXPECT_EQ(mixed.at(x, 6), noise.at(x, 6)) << "a kept row";
  }
}
