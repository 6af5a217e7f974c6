// Every CUDA kernel against its CPU reference: seeded random planes and a real
// frame from media/, awkward shapes (1×1, 2×2, odd sizes, 1921×1081) and
// padded pitches; outputs poisoned first; exact or ±1 LSB where rounding
// differs. A failing plane is dumped as PGM into $VPIPE_TEST_DUMP_DIR (or /tmp).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "../e2e/media_check.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/strategy.hpp"

using namespace vpipe;

namespace {

constexpr std::uint8_t kPoison = 0xCD;

// A plane in host memory and its device twin, with a chosen pitch padding.
struct TestPlane {
  PlaneView host{}, device{};
  std::vector<std::uint8_t> bytes;
  TestPlane(int w, int h, int ch, int pad, std::uint32_t seed) {
    // pad < 0: the pitch is the row rounded up to -pad bytes, as cudaMallocPitch
    // and FFmpeg lay frames out (rows aligned, width not a multiple of 8).
    const std::size_t row = static_cast<std::size_t>(w * ch);
    const std::size_t pitch = pad >= 0 ? row + static_cast<std::size_t>(pad)
                                       : (row + static_cast<std::size_t>(-pad) - 1) / -pad * -pad;
    bytes.assign(pitch * static_cast<std::size_t>(h), kPoison);
    host = {bytes.data(), w, h, ch, pitch};
    if (seed) {
      std::mt19937 rng(seed);
      for (int y = 0; y < h; ++y)
        for (std::size_t i = 0; i < host.row_bytes(); ++i)
          host.row(y)[i] = static_cast<std::uint8_t>(rng());
    }
    void* d = nullptr;
    VPIPE_CUDA_TRY(cudaMalloc(&d, std::max<std::size_t>(bytes.size(), 1)));
    device = {static_cast<std::uint8_t*>(d), w, h, ch, pitch};
    upload();
  }
  ~TestPlane() { cudaFree(device.data); }
  TestPlane(const TestPlane&) = delete;
  TestPlane& operator=(const TestPlane&) = delete;
  void upload() {
    VPIPE_CUDA_TRY(cudaMemcpy(device.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  }
  std::vector<std::uint8_t> download() const {
    std::vector<std::uint8_t> out(bytes.size());
    VPIPE_CUDA_TRY(cudaMemcpy(out.data(), device.data, out.size(), cudaMemcpyDeviceToHost));
    return out;
  }
};

void dump_pgm(const std::string& name, const PlaneView& p) {
  const char* dir = std::getenv("VPIPE_TEST_DUMP_DIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name + ".pgm";
  std::ofstream f(path, std::ios::binary);
  f << "P5\n" << p.row_bytes() << " " << p.height << "\n255\n";
  for (int y = 0; y < p.height; ++y)
    f.write(reinterpret_cast<const char*>(p.row(y)), static_cast<long>(p.row_bytes()));
}

// Compares the device output with the reference plane (host): max |diff| <= tol
// inside the rows, the pitch padding untouched, and not all poison/zero.
::testing::AssertionResult matches(const TestPlane& got, const PlaneView& want, int tol,
                                   const std::string& what) {
  const auto bytes = got.download();
  const PlaneView g{const_cast<std::uint8_t*>(bytes.data()), got.host.width, got.host.height,
                    got.host.channels, got.host.pitch};
  int worst = 0, wx = 0, wy = 0;
  bool any_real = false, want_real = false;
  for (int y = 0; y < g.height; ++y) {
    for (std::size_t i = 0; i < g.row_bytes(); ++i) {
      const int d = std::abs(int(g.row(y)[i]) - int(want.row(y)[i]));
      if (d > worst) worst = d, wx = static_cast<int>(i), wy = y;
      any_real |= g.row(y)[i] != kPoison && g.row(y)[i] != 0;
      want_real |= want.row(y)[i] != kPoison && want.row(y)[i] != 0;
    }
    for (std::size_t i = g.row_bytes(); i < g.pitch; ++i)
      if (g.row(y)[i] != kPoison)
        return ::testing::AssertionFailure() << what << ": wrote into the pitch padding";
  }
  // (Unless the reference is all zero too: Sobel of a 2×2 plane is flat.)
  if (g.row_bytes() * static_cast<std::size_t>(g.height) >= 16 && !any_real && want_real)
    return ::testing::AssertionFailure() << what << ": output is all poison or zero";
  if (worst > tol) {
    dump_pgm("vpipe_fail_got", g);
    dump_pgm("vpipe_fail_want", want);
    return ::testing::AssertionFailure()
           << what << ": |diff| " << worst << " > " << tol << " at byte " << wx << ", row " << wy;
  }
  return ::testing::AssertionSuccess();
}

class Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = cuda_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
    VPIPE_CUDA_TRY(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }
  void sync() { VPIPE_CUDA_TRY(cudaStreamSynchronize(stream_)); }
  cudaStream_t stream_{};
};

struct Shape {
  int w, h;
};
// 640×360 and 1921×1081 span many thread blocks; the vector paths (8–16
// bytes per access) need aligned rows: 64×64 and 640×360 tight, every
// shape with 64-byte-aligned rows (pad -64), odd widths with ragged ends.
const Shape kAllShapes[] = {{1, 1}, {2, 2}, {7, 5}, {33, 17}, {64, 64}, {640, 360}, {1921, 1081}};
// VPIPE_KERNEL_SHAPES=small leaves out 1921×1081 from the shape sweeps: for
// compute-sanitizer racecheck, which is too slow for the full-size sweep (it
// timed out at 7 minutes on the H200). Small shapes still span several thread
// blocks, which is where shared-memory hazards live. Said on stderr when used.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> list = [] {
    const char* env = std::getenv("VPIPE_KERNEL_SHAPES");
    std::vector<Shape> all(std::begin(kAllShapes), std::end(kAllShapes));
    if (!env || std::string(env) != "small") return all;
    std::fprintf(stderr,
                 "kernels_test: VPIPE_KERNEL_SHAPES=small: shape sweeps without 1921x1081\n");
    all.pop_back();
    return all;
  }();
  return list;
}
const int kPads[] = {0, 37, -64};
// Every matrix and range, and every chroma siting among them.
const ColorSpec kSpecs[] = {{ColorMatrix::kBT601, ColorRange::kLimited, ChromaSiting::kLeft},
                            {ColorMatrix::kBT601, ColorRange::kFull, ChromaSiting::kCenter},
                            {ColorMatrix::kBT709, ColorRange::kLimited, ChromaSiting::kTopLeft},
                            {ColorMatrix::kBT709, ColorRange::kFull, ChromaSiting::kTop},
                            {ColorMatrix::kBT2020, ColorRange::kLimited, ChromaSiting::kBottomLeft},
                            {ColorMatrix::kBT2020, ColorRange::kFull, ChromaSiting::kBottom}};

std::string label(const char* op, Shape s, int pad, int ch = 1) {
  return std::string(op) + " " + std::to_string(s.w) + "x" + std::to_string(s.h) + "x" +
         std::to_string(ch) +
         (pad < 0 ? " rows aligned to " + std::to_string(-pad) : " pad " + std::to_string(pad));
}

}  // namespace

TEST_F(Kernels, Nv12AndYuv420pToRgbMatchReference) {
  for (Shape s : shapes())
    for (int pad : kPads)
      for (int ch : {3, 4})
        for (ColorSpec spec : kSpecs) {
          const int cw = (s.w + 1) / 2, chh = (s.h + 1) / 2;
          TestPlane y(s.w, s.h, 1, pad, 11), uv(cw, chh, 2, pad, 12), u(cw, chh, 1, pad, 13),
              v(cw, chh, 1, pad, 14), out(s.w, s.h, ch, pad, 0), want(s.w, s.h, ch, pad, 0);
          cuda::nv12_to_rgb(y.device, uv.device, out.device, spec, stream_);
          sync();
          ref::nv12_to_rgb(y.host, uv.host, want.host, spec);
          ASSERT_TRUE(matches(out, want.host, 1, label("nv12_to_rgb", s, pad, ch)));
          out.upload();  // poison again
          cuda::yuv420p_to_rgb(y.device, u.device, v.device, out.device, spec, stream_);
          sync();
          ref::yuv420p_to_rgb(y.host, u.host, v.host, want.host, spec);
          ASSERT_TRUE(matches(out, want.host, 1, label("yuv420p_to_rgb", s, pad, ch)));
        }
}

TEST_F(Kernels, RgbToNv12AndYuv420pMatchReference) {
  for (Shape s : shapes())
    for (int pad : kPads)
      for (ColorSpec spec : kSpecs) {
        const int cw = (s.w + 1) / 2, chh = (s.h + 1) / 2;
        TestPlane rgb(s.w, s.h, 4, pad, 21), y(s.w, s.h, 1, pad, 0), uv(cw, chh, 2, pad, 0),
            u(cw, chh, 1, pad, 0), v(cw, chh, 1, pad, 0), wy(s.w, s.h, 1, pad, 0),
            wuv(cw, chh, 2, pad, 0), wu(cw, chh, 1, pad, 0), wv(cw, chh, 1, pad, 0);
        cuda::rgb_to_nv12(rgb.device, y.device, uv.device, spec, stream_);
        cuda::rgb_to_yuv420p(rgb.device, y.device, u.device, v.device, spec, stream_);
        sync();
        ref::rgb_to_nv12(rgb.host, wy.host, wuv.host, spec);
        ref::rgb_to_yuv420p(rgb.host, wy.host, wu.host, wv.host, spec);
        ASSERT_TRUE(matches(y, wy.host, 1, label("rgb_to_nv12 Y", s, pad)));
        ASSERT_TRUE(matches(uv, wuv.host, 1, label("rgb_to_nv12 UV", s, pad)));
        ASSERT_TRUE(matches(u, wu.host, 1, label("rgb_to_yuv420p U", s, pad)));
        ASSERT_TRUE(matches(v, wv.host, 1, label("rgb_to_yuv420p V", s, pad)));
      }
}

TEST_F(Kernels, ResizeMatchesOpenCv) {
  const std::pair<Shape, Shape> cases[] = {
      {{1921, 1081}, {640, 360}}, {{1280, 720}, {1921, 1081}},
      {{7, 5}, {3, 2}},           {{2, 2}, {1, 1}},
      {{1, 1}, {5, 3}},           {{64, 64}, {33, 17}},
      {{1920, 1080}, {960, 540}}, {{66, 34}, {33, 17}},  // exact halves, ragged rows
      {{99, 64}, {33, 16}}};                             // whole-number area ratios 3 × 4
  for (auto [from, to] : cases)
    for (int ch : {1, 2, 4})
      for (int pad : kPads)
        for (auto interp : {ref::Interp::kNearest, ref::Interp::kBilinear, ref::Interp::kArea}) {
          const bool shrinking = to.w <= from.w && to.h <= from.h;
          if (interp == ref::Interp::kArea && !shrinking) continue;  // area is for shrinking
          TestPlane src(from.w, from.h, ch, pad, 31), out(to.w, to.h, ch, pad, 0),
              want(to.w, to.h, ch, pad, 0);
          cuda::resize_plane(src.device, out.device, interp, stream_);
          sync();
          ref::resize_plane(src.host, want.host, interp);
          const int tol = interp == ref::Interp::kNearest ? 0 : 1;
          ASSERT_TRUE(matches(out, want.host, tol,
                              label(interp == ref::Interp::kNearest ? "resize nearest"
                                    : interp == ref::Interp::kArea  ? "resize area"
                                                                    : "resize bilinear",
                                    from, pad, ch) +
                                  " → " + std::to_string(to.w) + "x" + std::to_string(to.h)));
        }
}

// resize_planes: NV12's two planes at once. Exact halves of both run as one launch (8 output
// bytes per thread where rows allow it, 4 where not); a chroma plane that cannot halve exactly
// (66×34 → 33×17 luma: 33×17 → 17×9 chroma) sends every plane through resize_plane.
TEST_F(Kernels, ResizePlanesMatchesResizePlaneOnEachPlane) {
  const std::pair<Shape, Shape> cases[] = {{{1920, 1080}, {960, 540}}, {{3840, 2160}, {1920, 1080}},
                                           {{64, 64}, {32, 32}},       {{66, 34}, {33, 17}},
                                           {{1922, 1082}, {961, 541}}, {{640, 360}, {426, 240}}};
  for (auto [from, to] : cases)
    for (int pad : kPads)
      for (auto interp : {ref::Interp::kBilinear, ref::Interp::kArea}) {
        const int cw = (from.w + 1) / 2, ch = (from.h + 1) / 2, tcw = (to.w + 1) / 2,
                  tch = (to.h + 1) / 2;
        TestPlane y(from.w, from.h, 1, pad, 35), uv(cw, ch, 2, pad, 36), oy(to.w, to.h, 1, pad, 0),
            ouv(tcw, tch, 2, pad, 0), wy(to.w, to.h, 1, pad, 0), wuv(tcw, tch, 2, pad, 0);
        const PlaneView src[2] = {y.device, uv.device}, dst[2] = {oy.device, ouv.device};
        cuda::resize_planes(src, dst, 2, interp, stream_);
        sync();
        ref::resize_plane(y.host, wy.host, interp);
        ref::resize_plane(uv.host, wuv.host, interp);
        const std::string what = label("resize_planes", from, pad) + " → " + std::to_string(to.w) +
                                 "x" + std::to_string(to.h) +
                                 (interp == ref::Interp::kArea ? " area" : " bilinear");
        ASSERT_TRUE(matches(oy, wy.host, 1, what + " Y"));
        ASSERT_TRUE(matches(ouv, wuv.host, 1, what + " UV"));
      }
}

// Area shrinks to exactly 2/3 (1080p → 720p) run the integer kernel of weight-9 sums: OpenCV's
// INTER_AREA bytes exactly, every pixel size, the row tails (20 bytes: 8 + 8 + 4), unaligned rows
// (pad 37: the byte-by-byte path), one plane or NV12's two in one launch.
TEST_F(Kernels, TwoThirdsAreaResizeIsOpenCvsExactly) {
  const std::pair<Shape, Shape> cases[] = {
      {{1920, 1080}, {1280, 720}}, {{3840, 2160}, {2560, 1440}}, {{3, 3}, {2, 2}},
      {{30, 9}, {20, 6}},          {{99, 6}, {66, 4}},           {{1281, 723}, {854, 482}}};
  for (auto [from, to] : cases)
    for (int pad : kPads) {
      for (int ch : {1, 2, 4}) {
        TestPlane src(from.w, from.h, ch, pad, 61), out(to.w, to.h, ch, pad, 0),
            want(to.w, to.h, ch, pad, 0);
        cuda::resize_plane(src.device, out.device, ref::Interp::kArea, stream_);
        sync();
        ref::resize_plane(src.host, want.host, ref::Interp::kArea);
        ASSERT_TRUE(matches(out, want.host, 0, label("resize 2/3 area", from, pad, ch)));
      }
      if (from.w % 2 || from.h % 2) continue;  // NV12's chroma of an odd size is not 2/3
      TestPlane y(from.w, from.h, 1, pad, 62), uv(from.w / 2, from.h / 2, 2, pad, 63),
          oy(to.w, to.h, 1, pad, 0), ouv(to.w / 2, to.h / 2, 2, pad, 0), wy(to.w, to.h, 1, pad, 0),
          wuv(to.w / 2, to.h / 2, 2, pad, 0);
      const PlaneView src[2] = {y.device, uv.device}, dst[2] = {oy.device, ouv.device};
      cuda::resize_planes(src, dst, 2, ref::Interp::kArea, stream_);
      sync();
      ref::resize_plane(y.host, wy.host, ref::Interp::kArea);
      ref::resize_plane(uv.host, wuv.host, ref::Interp::kArea);
      ASSERT_TRUE(matches(oy, wy.host, 0, label("resize_planes 2/3 area Y", from, pad)));
      ASSERT_TRUE(matches(ouv, wuv.host, 0, label("resize_planes 2/3 area UV", from, pad)));
    }
}

TEST_F(Kernels, GaussianBlurMatchesOpenCv) {
  auto scratch = make_strategy("pool");
  for (Shape s : shapes())
    for (int pad : kPads)
      for (int ch : {1, 2, 3, 4})
        // radius 2, 5, 8 (the largest of the one-pass kernel), 12 (two passes)
        for (double sigma : {0.5, 1.5, 2.5, 4.0}) {
          TestPlane src(s.w, s.h, ch, pad, 41), out(s.w, s.h, ch, pad, 0),
              want(s.w, s.h, ch, pad, 0);
          cuda::gaussian_blur_plane(src.device, out.device, sigma, scratch.resource(), stream_);
          sync();
          ref::gaussian_blur_plane(src.host, want.host, sigma);
          ASSERT_TRUE(matches(out, want.host, 1,
                              label("blur", s, pad, ch) + " sigma " + std::to_string(sigma)));
          if (sigma == 1.5) {  // in place: the two-pass path
            cuda::gaussian_blur_plane(src.device, src.device, sigma, scratch.resource(), stream_);
            sync();
            ASSERT_TRUE(matches(src, want.host, 1, label("blur in place", s, pad, ch)));
          }
        }
}

TEST_F(Kernels, PointwiseFlipCropFillAreExact) {
  std::uint8_t lut[256];
  ref::make_eq_lut(0.1, 1.3, 0.8, lut);
  for (Shape s : shapes())
    for (int pad : kPads)
      for (int ch : {1, 2, 3, 4}) {
        TestPlane src(s.w, s.h, ch, pad, 51), out(s.w, s.h, ch, pad, 0), want(s.w, s.h, ch, pad, 0);
        cuda::invert_plane(src.device, out.device, stream_);
        sync();
        ref::invert_plane(src.host, want.host);
        ASSERT_TRUE(matches(out, want.host, 0, label("invert", s, pad, ch)));
        cuda::lut_plane(src.device, out.device, lut, stream_);
        sync();
        ref::lut_plane(src.host, want.host, lut);
        ASSERT_TRUE(matches(out, want.host, 0, label("lut", s, pad, ch)));
        for (auto [h, v] : {std::pair{true, false}, {false, true}, {true, true}}) {
          cuda::flip_plane(src.device, out.device, h, v, stream_);
          sync();
          ref::flip_plane(src.host, want.host, h, v);
          ASSERT_TRUE(matches(out, want.host, 0, label("flip", s, pad, ch)));
        }
        cuda::fill_plane(out.device, 128, stream_);
        sync();
        ref::fill_plane(want.host, 128);
        ASSERT_TRUE(matches(out, want.host, 0, label("fill", s, pad, ch)));
        if (s.w > 2 && s.h > 2) {
          TestPlane c(s.w - 2, s.h - 1, ch, pad, 0), wc(s.w - 2, s.h - 1, ch, pad, 0);
          cuda::crop_plane(src.device, c.device, 1, 1, stream_);
          sync();
          ref::crop_plane(src.host, wc.host, 1, 1);
          ASSERT_TRUE(matches(c, wc.host, 0, label("crop", s, pad, ch)));
        }
      }
}

TEST_F(Kernels, InterleaveUvIsAnExactCopy) {
  for (Shape s : shapes())
    for (int pad : kPads) {
      TestPlane u(s.w, s.h, 1, pad, 11), v(s.w, s.h, 1, pad, 12), out(s.w, s.h, 2, pad, 0),
          want(s.w, s.h, 2, pad, 0);
      cuda::interleave_uv(u.device, v.device, out.device, stream_);
      sync();
      ref::interleave_uv(u.host, v.host, want.host);
      ASSERT_TRUE(matches(out, want.host, 0, label("interleave_uv", s, pad, 2)));
    }
}

TEST_F(Kernels, FusedNv12ResizeToRgbMatchesReference) {
  // Exact halves (bilinear and area) take the vector kernel where rows are
  // aligned (pad -64), with a ragged row end at 33 pixels; the rest the
  // general one, per interpolation (area: luma shrinks, chroma may grow).
  const std::pair<Shape, Shape> cases[] = {{{1920, 1080}, {1280, 720}}, {{1921, 1081}, {640, 361}},
                                           {{64, 64}, {64, 64}},        {{2, 2}, {7, 5}},
                                           {{1920, 1080}, {960, 540}},  {{66, 34}, {33, 17}},
                                           {{1920, 1080}, {480, 270}}};
  for (auto [from, to] : cases)
    for (auto interp : {ref::Interp::kBilinear, ref::Interp::kArea, ref::Interp::kNearest})
      for (int pad : {37, -64})
        for (int ch : {3, 4}) {
          // Aligned rows (the halves' vector kernel) left- and centre-sited; else also bottom.
          const ColorSpec spec{ColorMatrix::kBT709, ColorRange::kLimited,
                               ch == 3   ? ChromaSiting::kLeft
                               : pad < 0 ? ChromaSiting::kCenter
                                         : ChromaSiting::kBottom};
          const int opad = pad < 0 ? pad : 0;
          TestPlane y(from.w, from.h, 1, pad, 61),
              uv((from.w + 1) / 2, (from.h + 1) / 2, 2, opad, 62), out(to.w, to.h, ch, opad, 0),
              want(to.w, to.h, ch, opad, 0);
          cuda::nv12_resize_to_rgb(y.device, uv.device, out.device, spec, interp, stream_);
          sync();
          ref::nv12_resize_to_rgb(y.host, uv.host, want.host, spec, interp);
          const char* how = interp == ref::Interp::kArea      ? " area"
                            : interp == ref::Interp::kNearest ? " nearest"
                                                              : "";
          ASSERT_TRUE(matches(out, want.host, 1,
                              label("nv12_resize_to_rgb", from, pad, ch) + " → " +
                                  std::to_string(to.w) + "x" + std::to_string(to.h) + how));
        }
}

TEST_F(Kernels, RealFrameFromTheSample) {
  // The sample's first frame (yuv420p), interleaved to NV12 on the host.
  std::optional<Frame> frame;
  test::for_each_frame(test::kSample, [&](const Frame& f) {
    if (f.index == 0 && !frame) frame = f;
  });
  ASSERT_TRUE(frame.has_value());
  const int w = frame->format.width, h = frame->format.height;
  TestPlane y(w, h, 1, 64, 0), uv(w / 2, h / 2, 2, 0, 0), rgb(w, h, 3, 0, 0), want(w, h, 3, 0, 0);
  ref::copy_plane(frame->planes[0], y.host);
  for (int r = 0; r < h / 2; ++r)
    for (int x = 0; x < w / 2; ++x) {
      uv.host.row(r)[2 * x] = frame->planes[1].row(r)[x];
      uv.host.row(r)[2 * x + 1] = frame->planes[2].row(r)[x];
    }
  y.upload();
  uv.upload();
  cuda::nv12_to_rgb(y.device, uv.device, rgb.device, {ColorMatrix::kBT709, ColorRange::kLimited},
                    stream_);
  sync();
  ref::nv12_to_rgb(y.host, uv.host, want.host, {ColorMatrix::kBT709, ColorRange::kLimited});
  EXPECT_TRUE(matches(rgb, want.host, 1, "nv12_to_rgb on the sample's first frame"));
  // And through a 4:2:0 round trip on the device: RGB → NV12 → RGB stays close.
  TestPlane y2(w, h, 1, 0, 0), uv2(w / 2, h / 2, 2, 0, 0), rgb2(w, h, 3, 0, 0);
  cuda::rgb_to_nv12(rgb.device, y2.device, uv2.device, {}, stream_);
  cuda::nv12_to_rgb(y2.device, uv2.device, rgb2.device, {}, stream_);
  sync();
  const auto a = rgb.download(), b = rgb2.download();
  const PlaneView pa{const_cast<std::uint8_t*>(a.data()), w, h, 3, rgb.host.pitch};
  const PlaneView pb{const_cast<std::uint8_t*>(b.data()), w, h, 3, rgb2.host.pitch};
  EXPECT_GT(ref::psnr(pa, pb), 30.0) << "4:2:0 round trip of a real frame";
}

TEST_F(Kernels, BoxBlurUnsharpAndSobelMatchOpenCv) {
  auto scratch = make_strategy("pool");
  for (Shape s : shapes())
    for (int pad : kPads)
      for (int ch : {1, 2, 4}) {
        TestPlane src(s.w, s.h, ch, pad, 71), out(s.w, s.h, ch, pad, 0), want(s.w, s.h, ch, pad, 0);
        for (int r : {1, 3, 10}) {
          out.upload();
          cuda::box_blur_plane(src.device, out.device, r, scratch.resource(), stream_);
          sync();
          ref::box_blur_plane(src.host, want.host, r);
          ASSERT_TRUE(matches(out, want.host, 1,
                              label("box blur", s, pad, ch) + " r " + std::to_string(r)));
        }
        for (double amount : {0.0, 0.8, 2.0}) {
          out.upload();
          cuda::unsharp_plane(src.device, out.device, 1.2, amount, scratch.resource(), stream_);
          sync();
          ref::unsharp_plane(src.host, want.host, 1.2, amount);
          ASSERT_TRUE(matches(out, want.host, 1,
                              label("unsharp", s, pad, ch) + " amount " + std::to_string(amount)));
        }
        out.upload();
        cuda::sobel_plane(src.device, out.device, stream_);
        sync();
        ref::sobel_plane(src.host, want.host);
        ASSERT_TRUE(matches(out, want.host, 1, label("sobel", s, pad, ch)));
      }
}

TEST_F(Kernels, PadOverlayAndP010MatchReference) {
  for (Shape s : shapes())
    for (int pad : kPads) {
      // pad: the source into a canvas 6 wider and 4 taller, at (3, 2); and a
      // letterbox (8 rows above and below, at x = 0: whole 16-byte copies).
      TestPlane src(s.w, s.h, 2, pad, 81), canvas(s.w + 6, s.h + 4, 2, pad, 0),
          want(s.w + 6, s.h + 4, 2, pad, 0);
      cuda::pad_plane(src.device, canvas.device, 3, 2, 16, stream_);
      sync();
      ref::pad_plane(src.host, want.host, 3, 2, 16);
      ASSERT_TRUE(matches(canvas, want.host, 0, label("pad", s, pad, 2)));
      TestPlane box(s.w, s.h + 16, 2, pad, 0), wantbox(s.w, s.h + 16, 2, pad, 0);
      cuda::pad_plane(src.device, box.device, 0, 8, 16, stream_);
      sync();
      ref::pad_plane(src.host, wantbox.host, 0, 8, 16);
      ASSERT_TRUE(matches(box, wantbox.host, 0, label("letterbox", s, pad, 2)));
      // pad, edges repeated (the pad filter's default), 1 and 2 bytes per pixel: the
      // reference is OpenCV's BORDER_REPLICATE.
      for (int ch : {1, 2}) {
        TestPlane from(s.w, s.h, ch, pad, 86), edge(s.w + 5, s.h + 3, ch, pad, 0),
            wantedge(s.w + 5, s.h + 3, ch, pad, 0);
        cuda::pad_edge_plane(from.device, edge.device, stream_);
        sync();
        ref::pad_plane(from.host, wantedge.host);
        ASSERT_TRUE(matches(edge, wantedge.host, 0, label("pad_edge", s, pad, ch)));
      }
      // overlay: an RGBA mark over an RGB(A) frame, partly outside it.
      for (int ch : {3, 4}) {
        TestPlane base(s.w, s.h, ch, pad, 82),
            mark(std::max(1, s.w / 2 + 1), std::max(1, s.h / 2 + 1), 4, pad, 83),
            out(s.w, s.h, ch, pad, 0), wantov(s.w, s.h, ch, pad, 0);
        const int ox = s.w / 2, oy = s.h / 3;
        cuda::overlay_rgba(base.device, mark.device, out.device, ox, oy, 0.7f, stream_);
        sync();
        ref::overlay_rgba(base.host, mark.host, wantov.host, ox, oy, 0.7f);
        ASSERT_TRUE(matches(out, wantov.host, 1, label("overlay", s, pad, ch)));
      }
      // 10-bit samples → 8 bits: P010's planes (the value at bit 6) and
      // yuv420p10le's (at bit 0), against the reference.
      for (const auto& [ch, shift] : {std::pair{2, 6}, std::pair{4, 6}, std::pair{2, 0}}) {
        TestPlane wide(s.w, s.h, ch, pad, 87), narrow(s.w, s.h, ch / 2, pad, 0),
            wantn(s.w, s.h, ch / 2, pad, 0);
        cuda::narrow_plane(wide.device, narrow.device, 10, shift, stream_);
        sync();
        ref::narrow_plane(wide.host, wantn.host, 10, shift);
        ASSERT_TRUE(matches(narrow, wantn.host, 0, label("narrow_plane", s, pad, ch)));
      }
      // P010 → RGB(A) with every colour spec.
      for (ColorSpec spec : kSpecs) {
        TestPlane y(s.w, s.h, 2, pad, 84), uv((s.w + 1) / 2, (s.h + 1) / 2, 4, pad, 85),
            rgb(s.w, s.h, 4, pad, 0), wantp(s.w, s.h, 4, pad, 0);
        cuda::p010_to_rgb(y.device, uv.device, rgb.device, spec, stream_);
        sync();
        ref::p010_to_rgb(y.host, uv.host, wantp.host, spec);
        ASSERT_TRUE(matches(rgb, wantp.host, 1, label("p010_to_rgb", s, pad, 4)));
      }
    }
}
