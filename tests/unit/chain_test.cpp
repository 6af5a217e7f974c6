#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "../e2e/media_check.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/pipeline/filters/filter.hpp"

using namespace vpipe;

namespace {
const FrameFormat k720{AV_PIX_FMT_YUV420P, 1280, 720};

// The message of the chain_error that building `chain` throws, or "".
std::string chain_error_of(const std::string& chain, FrameFormat in = k720) {
  try {
    (void)build_chain(parse_chain(chain), in);
  } catch (const chain_error& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST(ChainParser, ParsesPositionalAndNamedArguments) {
  const auto specs = parse_chain("resize=1280x720, blur=sigma=1.5 ,crop=w=64:h=32:x=0:y=2,invert");
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "resize");
  ASSERT_EQ(specs[0].args.size(), 1u);
  EXPECT_EQ(specs[0].args[0].first, "");
  EXPECT_EQ(specs[0].args[0].second, "1280x720");
  EXPECT_EQ(specs[1].name, "blur");
  EXPECT_EQ(specs[1].args[0], (std::pair<std::string, std::string>{"sigma", "1.5"}));
  EXPECT_EQ(specs[2].args.size(), 4u);
  EXPECT_EQ(specs[3].name, "invert");
  EXPECT_TRUE(specs[3].args.empty());
  EXPECT_TRUE(parse_chain("").empty());
  EXPECT_TRUE(parse_chain("   ").empty());
}

TEST(ChainParser, RejectsMalformedText) {
  EXPECT_THROW((void)parse_chain("resize=1280x720,,blur"), chain_error);
  EXPECT_THROW((void)parse_chain(",blur"), chain_error);
  EXPECT_THROW((void)parse_chain("blur="), chain_error);
  EXPECT_THROW((void)parse_chain("blur=sigma="), chain_error);
  EXPECT_THROW((void)parse_chain("=3"), chain_error);
  EXPECT_THROW((void)parse_chain("bl ur=3"), chain_error);
}

TEST(ChainBuilder, ConfiguresFormatsThroughTheChain) {
  const auto chain =
      build_chain(parse_chain("resize=640x360,blur=sigma=1.5,crop=w=320:h=240"), k720);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].out, (FrameFormat{AV_PIX_FMT_YUV420P, 640, 360}));
  EXPECT_EQ(chain[2].out, (FrameFormat{AV_PIX_FMT_YUV420P, 320, 240}));
  const auto keep = build_chain(parse_chain("resize=640x-1"), {AV_PIX_FMT_YUV420P, 1920, 1080});
  EXPECT_EQ(keep[0].out.height, 360);
}

TEST(ChainBuilder, KeepsIdentityFiltersAsPassThroughAndInsertsConversions) {
  auto same = build_chain(parse_chain("blur=sigma=0,resize=1280x720"), k720);
  ASSERT_EQ(same.size(), 2u);
  EXPECT_TRUE(same[0].filter->is_identity());
  EXPECT_TRUE(same[1].filter->is_identity()) << "a resize to the input's own size";
  // After a size change mid-stream the same resize has work to do again.
  same[1].follow({AV_PIX_FMT_YUV420P, 640, 360});
  EXPECT_FALSE(same[1].filter->is_identity());
  EXPECT_EQ(same[1].out, k720);
  // (big-endian 10-bit has no planes vpipe describes: swscale converts it)
  const auto chain = build_chain(parse_chain("blur=2"), {AV_PIX_FMT_YUV420P10BE, 64, 64});
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].label, "format=yuv420p");
  EXPECT_EQ(chain[1].in.pix_fmt, AV_PIX_FMT_YUV420P);
}

// `null` (added as one file and one line of filters.def, issue #41): any format in and
// out, an identity, so no stage copies a frame for it.
TEST(ChainBuilder, NullPassesAnyFormatThroughAsAnIdentity) {
  for (const FrameFormat in :
       {k720, FrameFormat{AV_PIX_FMT_NV12, 64, 48}, FrameFormat{AV_PIX_FMT_RGB24, 33, 17}}) {
    const auto chain = build_chain(parse_chain("null"), in);
    ASSERT_EQ(chain.size(), 1u);
    EXPECT_EQ(chain[0].out, in);
    EXPECT_TRUE(chain[0].filter->is_identity());
  }
  const auto& info = FilterRegistry::instance().info("null");
  EXPECT_TRUE(info.cuda) << "the class's own info() says it";
  EXPECT_EQ(info.formats, "any");
}

// Every built-in filter's info() carries an example (docs/FILTERS.md shows it), and the
// example is a chain that parses and builds on 1080p yuv420p (one that reads a file: parses).
TEST(ChainBuilder, EveryFiltersExampleBuilds) {
  auto& reg = FilterRegistry::instance();
  for (const auto& name : reg.names()) {
    const auto& info = reg.info(name);
    SCOPED_TRACE(name);
    ASSERT_FALSE(info.example.empty());
    EXPECT_NE(info.example.find(name), std::string::npos) << "the example uses its filter";
    const auto specs = parse_chain(info.example);
    for (const auto& s : specs) EXPECT_NO_THROW((void)parse_params(reg.info(s.name), s.args));
    if (info.example.find("file=") == std::string::npos) {
      EXPECT_NO_THROW((void)build_chain(specs, {AV_PIX_FMT_YUV420P, 1920, 1080}));
    }
  }
}

TEST(ChainBuilder, ErrorsNameTheFilterAndTheProblem) {
  EXPECT_NE(chain_error_of("sharpen=3").find("unknown filter 'sharpen'"), std::string::npos);
  EXPECT_NE(chain_error_of("sharpen=3").find("blur"), std::string::npos) << "lists what exists";
  EXPECT_NE(chain_error_of("blur=sigma=-1").find("blur: bad value '-1' for sigma"),
            std::string::npos);
  EXPECT_NE(chain_error_of("blur=radius=2").find("unknown parameter 'radius'"), std::string::npos);
  EXPECT_NE(chain_error_of("blur=1:2").find("too many values"), std::string::npos);
  EXPECT_NE(chain_error_of("blur=sigma=1:sigma=2").find("given twice"), std::string::npos);
  EXPECT_NE(chain_error_of("resize=abc").find("WIDTHxHEIGHT"), std::string::npos);
  EXPECT_NE(chain_error_of("resize").find("missing required parameter 'size'"), std::string::npos);
  EXPECT_NE(chain_error_of("resize=641x360").find("multiple of 2x2"), std::string::npos);
  EXPECT_NE(chain_error_of("crop=w=2000:h=100").find("does not fit"), std::string::npos);
  EXPECT_NE(chain_error_of("flip=diagonal").find("one of h, v, hv"), std::string::npos);
  EXPECT_NE(chain_error_of("format=yuv999").find("unknown pixel format"), std::string::npos);
}

TEST(FilterRegistry, ListsBuiltinsAndRejectsDuplicates) {
  auto& reg = FilterRegistry::instance();
  for (const char* name : {"resize", "blur", "crop", "flip", "invert", "grayscale", "format"})
    EXPECT_TRUE(reg.contains(name)) << name;
  EXPECT_FALSE(reg.contains("nope"));
  FilterInfo dup = reg.info("blur");
  EXPECT_THROW(reg.add(dup), logic_error);
}

// ---- the fused path ----------------------------------------------------------

#include <cstdio>
#include <random>

TEST(ChainBuilder, UsesTheFusedPassForResizeToRgbOnNv12) {
  const FrameFormat nv12{AV_PIX_FMT_NV12, 640, 360};
  auto chain = build_chain(parse_chain("resize=1280x720,format=rgb24"), nv12);  // upscale: bilinear
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_NE(chain[0].label.find("fused"), std::string::npos) << chain[0].label;
  EXPECT_EQ(chain[0].out, (FrameFormat{AV_PIX_FMT_RGB24, 1280, 720}));
  EXPECT_TRUE(chain[0].filter->has_cuda());
  chain = build_chain(parse_chain("resize=320x180:interp=bilinear,format=rgba,invert"), nv12);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].out, (FrameFormat{AV_PIX_FMT_RGBA, 320, 180}));
  // A downscale (area by default) and nearest fuse too.
  chain = build_chain(parse_chain("resize=320x180,format=rgb24"), nv12);
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_NE(chain[0].label.find("fused"), std::string::npos) << chain[0].label;
  EXPECT_EQ(build_chain(parse_chain("resize=100x50:interp=nearest,format=rgba"), nv12).size(), 1u);
  // Not fused: the input is not NV12, or the target is not RGB.
  EXPECT_EQ(build_chain(parse_chain("resize=1280x720,format=rgb24"),
                        FrameFormat{AV_PIX_FMT_YUV420P, 640, 360})
                .size(),
            2u);
  EXPECT_EQ(build_chain(parse_chain("resize=1280x720,format=yuv420p"), nv12).size(), 2u);
}

// "auto" resolves in resize_rgb as in resize: area when shrinking, bilinear
// when growing. On noise the methods differ, so the fused output must be the
// reference's for exactly that method.
TEST(ChainBuilder, TheFusedPassInterpolatesAsResizeWould) {
  const FrameFormat nv12{AV_PIX_FMT_NV12, 96, 54};
  Frame in = Frame::allocate_host(nv12);
  std::mt19937 rng(3);
  for (int p = 0; p < 2; ++p)
    for (int y = 0; y < in.planes[p].height; ++y)
      for (std::size_t i = 0; i < in.planes[p].row_bytes(); ++i)
        in.planes[p].row(y)[i] = static_cast<std::uint8_t>(rng());
  const std::pair<const char*, ref::Interp> cases[] = {
      {"resize=60x34,format=rgb24", ref::Interp::kArea},
      {"resize=150x80,format=rgb24", ref::Interp::kBilinear},
      {"resize=60x34:interp=bilinear,format=rgb24", ref::Interp::kBilinear},
      {"resize=60x34:interp=nearest,format=rgb24", ref::Interp::kNearest}};
  for (const auto& [vf, interp] : cases) {
    auto chain = build_chain(parse_chain(vf), nv12);
    ASSERT_EQ(chain.size(), 1u) << vf;
    Frame got = Frame::allocate_host(chain[0].out), want = Frame::allocate_host(chain[0].out),
          other = Frame::allocate_host(chain[0].out);
    chain[0].filter->process(in, got);
    const ColorSpec bt601{ColorMatrix::kBT601, ColorRange::kLimited};  // resize_rgb's default
    ref::nv12_resize_to_rgb(in.planes[0], in.planes[1], want.planes[0], bt601, interp);
    ref::nv12_resize_to_rgb(
        in.planes[0], in.planes[1], other.planes[0], bt601,
        interp == ref::Interp::kBilinear ? ref::Interp::kNearest : ref::Interp::kBilinear);
    bool same = true, differs = false;
    for (int y = 0; y < got.format.height; ++y)
      for (std::size_t i = 0; i < got.planes[0].row_bytes(); ++i) {
        same &= got.planes[0].row(y)[i] == want.planes[0].row(y)[i];
        differs |= got.planes[0].row(y)[i] != other.planes[0].row(y)[i];
      }
    EXPECT_TRUE(same) << vf;
    EXPECT_TRUE(differs) << vf << ": the test cannot tell the methods apart";
  }
}

namespace {
// A smooth NV12 picture (a real frame's statistics, not noise, which the two
// paths' different chroma filters would take apart).
Frame smooth_nv12(int w, int h) {
  Frame in = Frame::allocate_host(FrameFormat{AV_PIX_FMT_NV12, w, h});
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      in.planes[0].row(y)[x] = static_cast<std::uint8_t>(16 + (x * 219) / (w - 1));
  for (int y = 0; y < h / 2; ++y)
    for (int x = 0; x < w / 2; ++x) {
      in.planes[1].row(y)[2 * x] = static_cast<std::uint8_t>(64 + y * 180 / h);
      in.planes[1].row(y)[2 * x + 1] = static_cast<std::uint8_t>(192 - x * 160 / w);
    }
  return in;
}

struct Diff {
  double mean;
  int worst;
};
// `resize`,format=rgb24 as the builder fuses it, against the unfused
// reference: the resize, then the format filter (swscale) on its own.
Diff fused_vs_split(const Frame& in, const std::string& resize) {
  auto fused = build_chain(parse_chain(resize + ",format=rgb24"), in.format);
  EXPECT_EQ(fused.size(), 1u) << resize;
  EXPECT_NE(fused[0].label.find("fused"), std::string::npos) << fused[0].label;
  auto resize_only = build_chain(parse_chain(resize), in.format);
  // The oracle converts with swscale (the format filter itself: the chain
  // builder would now turn a lone format=rgb24 on NV12 into resize_rgb too).
  const FilterInfo& fi = FilterRegistry::instance().info("format");
  auto swscale = fi.create(parse_params(fi, {{"", "rgb24"}}));
  const FrameFormat rgb = swscale->configure(resize_only[0].out);
  Frame mid = Frame::allocate_host(resize_only[0].out), a = Frame::allocate_host(fused[0].out),
        b = Frame::allocate_host(rgb);
  fused[0].filter->process(in, a);
  resize_only[0].filter->process(in, mid);
  swscale->process(mid, b);
  double sum = 0;
  int worst = 0;
  const int w = a.format.width, h = a.format.height;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * 3; ++x) {
      const int d = std::abs(a.planes[0].row(y)[x] - b.planes[0].row(y)[x]);
      sum += d;
      worst = std::max(worst, d);
    }
  return {sum / (static_cast<double>(h) * w * 3), worst};
}
}  // namespace

TEST(ChainBuilder, TheFusedPassMatchesResizeThenConvert) {
  const Frame in = smooth_nv12(320, 180);
  // Rounding differs (the fused pass keeps the resized samples unrounded) and
  // so does chroma: swscale upsamples it bicubically from the resized plane,
  // the fused pass samples the source's. Measured: mean 0.24 (bilinear),
  // 0.39 and 0.49 (area 1.6× and 2×), 0.48 (nearest) LSB, worst 1–2; BT.709
  // coefficients by mistake gave mean 4.0, worst 19 for the bilinear case.
  // (Which sampling the fused pass uses is checked on noise, where it shows:
  // ColorReference.FusedResizeSamplesLumaAsResizePlane.)
  for (const char* resize :
       {"resize=640x360", "resize=640x360:interp=bilinear",  // upscale: bilinear
        "resize=200x112", "resize=160x90",                   // area, 1.6× and 2×
        "resize=200x112:interp=nearest"}) {
    const Diff d = fused_vs_split(in, resize);
    EXPECT_LT(d.mean, 0.6) << resize << ": mean difference (LSB)";
    EXPECT_LE(d.worst, 2) << resize;
    std::printf("%s: mean %.3f LSB, worst %d\n", resize, d.mean, d.worst);
  }
}

TEST(ChainBuilder, AConversionToRgbAloneRunsOnTheGpuPathAsTheFusedPass) {
  // NVDEC's NV12 → rgb24 with no resize: one CUDA step at the same size, so
  // the frames stay on the device (Python's decode(filters="format=rgb24")).
  const Frame in = smooth_nv12(320, 180);
  auto chain = build_chain(parse_chain("format=rgb24"), in.format);
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_NE(chain[0].label.find("resize_rgb"), std::string::npos) << chain[0].label;
  EXPECT_TRUE(chain[0].filter->has_cuda());
  EXPECT_EQ(chain[0].out, (FrameFormat{AV_PIX_FMT_RGB24, 320, 180}));
  // YUV420P (CPU decode) goes the same way, through an exact interleave to NV12.
  chain = build_chain(parse_chain("format=rgba"), FrameFormat{AV_PIX_FMT_YUV420P, 320, 180});
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[1].out, (FrameFormat{AV_PIX_FMT_RGBA, 320, 180}));
  // And odd sizes, which resize= could not make: one siting rule for every 4:2:0 picture.
  for (const FrameFormat odd :
       {FrameFormat{AV_PIX_FMT_YUV420P, 719, 405}, FrameFormat{AV_PIX_FMT_NV12, 321, 181}}) {
    chain = build_chain(parse_chain("format=rgb24"), odd);
    EXPECT_NE(chain.back().label.find("resize_rgb"), std::string::npos) << chain.back().label;
    EXPECT_EQ(chain.back().out, (FrameFormat{AV_PIX_FMT_RGB24, odd.width, odd.height}));
  }
  // 10 bits at an odd size too: an exact repack to P010 (swscale's garbled the last chroma
  // column), then p010_to_rgb.
  chain = build_chain(parse_chain("format=rgb24"), FrameFormat{AV_PIX_FMT_YUV420P10LE, 17, 9});
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_NE(chain[0].label.find("yuv420p10_to_p010"), std::string::npos) << chain[0].label;
  EXPECT_NE(chain[1].label.find("p010_to_rgb"), std::string::npos) << chain[1].label;
  Frame ten = Frame::allocate_host(chain[0].in), p010 = Frame::allocate_host(chain[0].out);
  std::uint16_t n = 0;
  for (int p = 0; p < 3; ++p)
    for (int r = 0; r < ten.planes[p].height; ++r)
      for (int x = 0; x < ten.planes[p].width; ++x) {
        n = static_cast<std::uint16_t>((n * 37 + 11) % 1024);
        std::memcpy(ten.planes[p].row(r) + 2 * x, &n, 2);
      }
  chain[0].filter->process(ten, p010);
  auto at = [](const PlaneView& v, int r, int x) {
    std::uint16_t w;
    std::memcpy(&w, v.row(r) + 2 * x, 2);
    return w;
  };
  for (int r = 0; r < 9; ++r)
    for (int x = 0; x < 17; ++x)
      ASSERT_EQ(at(p010.planes[0], r, x), at(ten.planes[0], r, x) << 6) << r << "," << x;
  for (int r = 0; r < 5; ++r)
    for (int x = 0; x < 9; ++x) {
      ASSERT_EQ(at(p010.planes[1], r, 2 * x), at(ten.planes[1], r, x) << 6) << r << "," << x;
      ASSERT_EQ(at(p010.planes[1], r, 2 * x + 1), at(ten.planes[2], r, x) << 6) << r << "," << x;
    }
  // Against swscale's conversion of the same frame: within the fused pass's bounds.
  const FilterInfo& fi = FilterRegistry::instance().info("format");
  auto swscale = fi.create(parse_params(fi, {{"", "rgb24"}}));
  chain = build_chain(parse_chain("format=rgb24"), in.format);
  Frame a = Frame::allocate_host(chain[0].out),
        b = Frame::allocate_host(swscale->configure(in.format));
  chain[0].filter->process(in, a);
  swscale->process(in, b);
  int worst = 0;
  for (int y = 0; y < 180; ++y)
    for (int x = 0; x < 320 * 3; ++x)
      worst = std::max(worst, std::abs(a.planes[0].row(y)[x] - b.planes[0].row(y)[x]));
  EXPECT_LE(worst, 2);
}

// ---- the way back: RGB → NV12 / YUV420P ------------------------------------------

TEST(ChainBuilder, ReturnsFromRgbToYuvInOnePass) {
  const FrameFormat nv12{AV_PIX_FMT_NV12, 640, 360};
  // NV12 → fused resize to RGB → an RGB filter → back to NV12: three steps, all with CUDA kernels.
  auto chain = build_chain(parse_chain("resize=1280x720,format=rgb24,invert,format=nv12"), nv12);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_NE(chain[2].label.find("rgb_to_yuv"), std::string::npos) << chain[2].label;
  EXPECT_EQ(chain[2].out, (FrameFormat{AV_PIX_FMT_NV12, 1280, 720}));
  for (const auto& c : chain) EXPECT_TRUE(c.filter->has_cuda()) << c.label;
  // yuv420p too, from RGBA; other targets and non-RGB inputs keep swscale.
  chain = build_chain(parse_chain("format=yuv420p"), FrameFormat{AV_PIX_FMT_RGBA, 64, 32});
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_EQ(chain[0].out, (FrameFormat{AV_PIX_FMT_YUV420P, 64, 32}));
  EXPECT_TRUE(chain[0].filter->has_cuda());
  EXPECT_FALSE(build_chain(parse_chain("format=yuv444p"), FrameFormat{AV_PIX_FMT_RGB24, 64, 32})[0]
                   .filter->has_cuda());
  EXPECT_FALSE(build_chain(parse_chain("format=nv12"), FrameFormat{AV_PIX_FMT_YUV420P, 64, 32})[0]
                   .filter->has_cuda());
}

TEST(ChainBuilder, TheWayBackMatchesSwscale) {
  // A smooth RGB picture; rgb_to_yuv (2x2 chroma mean) against format=… through swscale.
  const FrameFormat rgb{AV_PIX_FMT_RGB24, 320, 180};
  Frame in = Frame::allocate_host(rgb);
  for (int y = 0; y < 180; ++y)
    for (int x = 0; x < 320; ++x) {
      std::uint8_t* px = in.planes[0].row(y) + 3 * x;
      px[0] = static_cast<std::uint8_t>(20 + (x * 200) / 319);
      px[1] = static_cast<std::uint8_t>(40 + y);
      px[2] = static_cast<std::uint8_t>(230 - (x + y) / 3);
    }
  for (const char* target : {"nv12", "yuv420p"}) {
    auto ours = build_chain(parse_chain(std::string("format=") + target), rgb);
    ASSERT_NE(ours[0].label.find("rgb_to_yuv"), std::string::npos);
    const FilterInfo& fi = FilterRegistry::instance().info("format");
    auto sws = fi.create(parse_params(fi, {{"", target}}));
    const FrameFormat out_fmt = sws->configure(rgb);
    ASSERT_EQ(out_fmt, ours[0].out);
    Frame a = Frame::allocate_host(out_fmt), b = Frame::allocate_host(out_fmt);
    ours[0].filter->process(in, a);
    sws->process(in, b);
    for (int p = 0; p < a.num_planes; ++p) {
      const auto& pa = a.planes[static_cast<std::size_t>(p)];
      const auto& pb = b.planes[static_cast<std::size_t>(p)];
      double sum = 0;
      int worst = 0;
      const int row_bytes = pa.width * pa.channels;
      for (int y = 0; y < pa.height; ++y)
        for (int x = 0; x < row_bytes; ++x) {
          const int d = std::abs(pa.row(y)[x] - pb.row(y)[x]);
          sum += d;
          worst = std::max(worst, d);
        }
      const double mean = sum / (static_cast<double>(row_bytes) * pa.height);
      // Measured: mean 0.004–0.024 LSB, worst 1 (BT.709 coefficients by mistake: mean 2.5–6.0,
      // worst 17).
      EXPECT_LT(mean, 0.5) << target << " plane " << p;
      EXPECT_LE(worst, 2) << target << " plane " << p;
    }
  }
}

TEST(ChainBuilder, TheWayBackRunsWhereItsInputIs) {
  const FrameFormat nv12{AV_PIX_FMT_NV12, 640, 360};
  // After CUDA steps it is one of them; after a CPU step (delay has no CUDA
  // kernel) it stays on the CPU instead of splitting the chain.
  auto chain = build_chain(parse_chain("resize=1280x720,format=rgb24,invert,format=nv12"), nv12);
  EXPECT_EQ(cuda_steps(chain), (std::vector<bool>{true, true, true}));
  chain = build_chain(parse_chain("resize=1280x720,format=rgb24,delay=ms=0,format=nv12"), nv12);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_TRUE(chain[2].filter->has_cuda());
  EXPECT_EQ(cuda_steps(chain), (std::vector<bool>{true, false, false}));
  // First in the chain: nothing on the GPU to join.
  chain = build_chain(parse_chain("format=nv12,blur=2"), FrameFormat{AV_PIX_FMT_RGB24, 64, 32});
  EXPECT_EQ(cuda_steps(chain), (std::vector<bool>{false, true}));
  // Identities are on neither side.
  chain = build_chain(parse_chain("blur=sigma=0,invert"), nv12);
  EXPECT_EQ(cuda_steps(chain), (std::vector<bool>{false, true}));
}

// Issue #26: the CPU path converts resize + format=rgb24 with the same math as
// the GPU's fused pass (NVDEC's NV12), so the two paths agree; on YUV420P the
// planes are interleaved to NV12 first (exact), then resize_rgb.
TEST(ChainBuilder, ResizeToRgbOnYuv420pUsesTheFusedPassLikeNv12) {
  const auto chain =
      build_chain(parse_chain("resize=320x180,format=rgb24"), {AV_PIX_FMT_YUV420P, 640, 360});
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].out.pix_fmt, AV_PIX_FMT_NV12);
  EXPECT_NE(chain[1].label.find("fused: resize_rgb"), std::string::npos) << chain[1].label;
  EXPECT_EQ(chain[1].out, (FrameFormat{AV_PIX_FMT_RGB24, 320, 180}));
}

// Fusion rules are a registry a plugin can add to (issue #17): the built-in
// ones first, in order; a new one joins after them and rewrites the chain.
TEST(FusionRules, APluginRuleRewritesTheChainAfterTheBuiltIns) {
  auto& registry = vpipe::FilterRegistry::instance();
  ASSERT_GE(registry.fusions().size(), 3u);
  EXPECT_EQ(registry.fusions().front().name, "resize+format→resize_rgb");
  // invert twice is no change: a rule that drops the pair (what a plugin could add).
  registry.add_fusion(
      {"test: invert,invert → nothing",
       [](vpipe::ChainBuilder&, const std::vector<vpipe::FilterSpec>& specs, std::size_t i) {
         return i + 1 < specs.size() && specs[i].name == "invert" && specs[i + 1].name == "invert"
                    ? std::size_t{2}
                    : std::size_t{0};
       }});
  EXPECT_THROW(registry.add_fusion({"test: invert,invert → nothing",
                                    [](vpipe::ChainBuilder&, const std::vector<vpipe::FilterSpec>&,
                                       std::size_t) { return std::size_t{0}; }}),
               vpipe::logic_error);
  const auto chain =
      vpipe::build_chain(vpipe::parse_chain("invert,invert,flip"), {AV_PIX_FMT_YUV420P, 64, 32});
  ASSERT_EQ(chain.size(), 1u) << "the pair is gone";
  EXPECT_EQ(chain[0].label, "flip");
  // The built-in rules still come first: resize + format is fused as before.
  const auto fused = vpipe::build_chain(vpipe::parse_chain("resize=32x16,format=rgb24"),
                                        {AV_PIX_FMT_NV12, 64, 32});
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_NE(fused[0].label.find("fused: resize_rgb"), std::string::npos) << fused[0].label;
}

// ---- pad and overlay ----------------------------------------------------------

// The blend as the filter's help states it, computed here independently:
// c = base(1 - a) + over·a, a = alpha/255 × opacity; the picture partly
// outside the frame is cut off, the frame's alpha kept.
TEST(Filters, OverlayBlendsAPictureFromAFileAsItsHelpSays) {
  const std::string png = (std::filesystem::temp_directory_path() /
                           ("vpipe_overlay_" + std::to_string(::getpid()) + ".png"))
                              .string();
  auto mark = [](int x, int y) { return std::array<int, 4>{200, 10 * x, 40 * y, 60 * x + 20}; };
  test::write_rgba_png(png, 6, 4, mark);
  auto chain = build_chain(parse_chain("overlay=file=" + png + ":x=12:y=5:opacity=0.5"),
                           {AV_PIX_FMT_RGBA, 16, 8});
  ASSERT_EQ(chain.size(), 1u);
  Frame in = Frame::allocate_host({AV_PIX_FMT_RGBA, 16, 8}), out = Frame::allocate_host(in.format);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 64; ++x) in.planes[0].row(y)[x] = static_cast<std::uint8_t>(x * 3 + y * 17);
  chain[0].filter->process(in, out);
  int worst = 0;
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 4; ++c) {
        const int base = in.planes[0].row(y)[4 * x + c];
        int want = base;
        const int u = x - 12, v = y - 5;
        if (c < 3 && u >= 0 && u < 6 && v >= 0 && v < 4) {
          const double a = mark(u, v)[3] / 255.0 * 0.5;
          want = static_cast<int>(std::lround(base * (1 - a) + mark(u, v)[c] * a));
        }
        worst = std::max(worst, std::abs(out.planes[0].row(y)[4 * x + c] - want));
      }
  EXPECT_LE(worst, 1);
  std::filesystem::remove(png);
}

TEST(Filters, OverlayAndPadSayWhatIsWrong) {
  auto message = [](const std::string& chain, FrameFormat in) -> std::string {
    try {
      (void)build_chain(parse_chain(chain), in);
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  };
  EXPECT_NE(message("overlay=file=/nonexistent/logo.png", {AV_PIX_FMT_RGBA, 16, 8})
                .find("/nonexistent/logo.png"),
            std::string::npos);
  EXPECT_NE(message("overlay=file=x.png", k720).find("put format=rgba before it"),
            std::string::npos);
  EXPECT_NE(chain_error_of("pad=w=1300:h=730:x=8").find("x and y must be 0"), std::string::npos);
  EXPECT_NE(chain_error_of("pad=w=1280:h=720:x=8:color=black").find("does not fit"),
            std::string::npos);
}

// pad with a colour: the border in that colour (limited-range black for
// yuv420p: Y 16, chroma 128), the picture at (x, y).
TEST(Filters, PadWithAColourLetterboxesThePicture) {
  auto chain =
      build_chain(parse_chain("pad=w=12:h=10:x=4:y=2:color=black"), {AV_PIX_FMT_YUV420P, 6, 4});
  ASSERT_EQ(chain.size(), 1u);
  Frame in = Frame::allocate_host({AV_PIX_FMT_YUV420P, 6, 4}),
        out = Frame::allocate_host(chain[0].out);
  for (int p = 0; p < 3; ++p)
    for (int y = 0; y < in.planes[p].height; ++y)
      for (int x = 0; x < in.planes[p].width; ++x) in.planes[p].row(y)[x] = 200;
  chain[0].filter->process(in, out);
  EXPECT_EQ(out.planes[0].row(0)[0], 16);
  EXPECT_EQ(out.planes[1].row(0)[0], 128);
  EXPECT_EQ(out.planes[0].row(2)[4], 200);  // the picture's first pixel
  EXPECT_EQ(out.planes[0].row(5)[9], 200);  // and its last
  EXPECT_EQ(out.planes[0].row(6)[9], 16);   // below it
  EXPECT_EQ(out.planes[1].row(1)[2], 200);  // chroma at (x/2, y/2)
  EXPECT_EQ(out.planes[2].row(1)[1], 128);
  // A full-range input (NVDEC's NV12 of one, its tags say so): black is Y 0.
  auto full = build_chain(parse_chain("pad=w=12:h=10:x=4:y=2:color=black"),
                          {AV_PIX_FMT_YUV420P, 6, 4}, {ColorMatrix::kBT709, ColorRange::kFull});
  full[0].filter->process(in, out);
  EXPECT_EQ(out.planes[0].row(0)[0], 0);
  EXPECT_EQ(out.planes[1].row(0)[0], 128);
}

// deinterlace takes the field each picture says came first (parity=auto), or the one asked
// for; with deint=interlaced a picture flagged progressive passes as it is. Every plane's
// rows alternate 16 (top field) and 235 (bottom): the kept field fills the picture.
TEST(Filters, DeinterlaceKeepsTheFieldThePictureOrTheUserSays) {
  const FrameFormat fmt{AV_PIX_FMT_YUV420P, 8, 8};
  Frame in = Frame::allocate_host(fmt);
  for (int p = 0; p < 3; ++p)
    for (int y = 0; y < in.planes[p].height; ++y)
      std::fill_n(in.planes[p].row(y), in.planes[p].width, y % 2 ? 235 : 16);
  const struct {
    std::string chain;
    FieldOrder flagged;
    int want;  // every sample of every plane
  } cases[] = {
      {"deinterlace", FieldOrder::kTopFirst, 16},
      {"deinterlace", FieldOrder::kBottomFirst, 235},
      {"deinterlace", FieldOrder::kProgressive, 16},  // all: as top first, FFmpeg's default
      {"deinterlace=parity=bff", FieldOrder::kTopFirst, 235},
      {"deinterlace=deint=interlaced", FieldOrder::kBottomFirst, 235},
      {"deinterlace=deint=interlaced", FieldOrder::kProgressive, -1},  // untouched
  };
  for (const auto& c : cases) {
    auto chain = build_chain(parse_chain(c.chain), fmt);
    ASSERT_EQ(chain.size(), 1u);
    EXPECT_TRUE(chain[0].filter->deinterlaces());
    in.set_fields(c.flagged);
    Frame out = Frame::allocate_host(fmt);
    chain[0].filter->process(in, out);
    for (int p = 0; p < 3; ++p)
      for (int y = 0; y < out.planes[p].height; ++y)
        ASSERT_EQ(out.planes[p].row(y)[1], c.want < 0 ? (y % 2 ? 235 : 16) : c.want)
            << c.chain << ", " << to_string(c.flagged) << ": plane " << p << " row " << y;
  }
  EXPECT_FALSE(build_chain(parse_chain("resize=4x4"), fmt)[0].filter->deinterlaces());
}

// 10-bit frames reach the 8-bit filters through to_8bit: NVDEC's P010 becomes
// NV12, yuv420p10le becomes yuv420p, each sample rounded half up (values by hand).
TEST(Filters, TenBitFramesAreNarrowedBeforeThe8BitFilters) {
  auto p010 = build_chain(parse_chain("invert"), {AV_PIX_FMT_P010LE, 4, 2});
  ASSERT_EQ(p010.size(), 2u);
  EXPECT_EQ(p010[0].label, "to_8bit");
  EXPECT_EQ(p010[0].out.pix_fmt, AV_PIX_FMT_NV12);
  auto planar = build_chain(parse_chain("blur=1"), {AV_PIX_FMT_YUV420P10LE, 64, 64});
  ASSERT_EQ(planar.size(), 2u);
  EXPECT_EQ(planar[0].out.pix_fmt, AV_PIX_FMT_YUV420P);

  Frame in = Frame::allocate_host({AV_PIX_FMT_P010LE, 4, 2});
  ASSERT_EQ(in.num_planes, 2);
  ASSERT_EQ(in.planes[0].channels, 2);
  ASSERT_EQ(in.planes[1].channels, 4);
  const int luma10[8] = {0, 1, 2, 5, 6, 513, 1021, 1023};  // → 0, 0, 1, 1, 2, 128, 255, 255
  const int want[8] = {0, 0, 1, 1, 2, 128, 255, 255};
  for (int i = 0; i < 8; ++i) {
    const int v = luma10[i] << 6;  // P010: the 10 bits at the top of 16
    in.planes[0].row(i / 4)[2 * (i % 4)] = static_cast<std::uint8_t>(v & 0xFF);
    in.planes[0].row(i / 4)[2 * (i % 4) + 1] = static_cast<std::uint8_t>(v >> 8);
  }
  for (int b = 0; b < 4; ++b) {  // chroma: 512 → 128
    in.planes[1].row(0)[2 * b] = 0;
    in.planes[1].row(0)[2 * b + 1] = 0x80;
  }
  Frame out = Frame::allocate_host(p010[0].out);
  p010[0].filter->process(in, out);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out.planes[0].row(i / 4)[i % 4], want[i]) << "sample " << i;
  EXPECT_EQ(out.planes[1].row(0)[0], 128);
  EXPECT_EQ(out.planes[1].row(0)[3], 128);
}

// The pixels' shape through a chain: a resize keeps the display shape (the sample aspect ratio
// follows the size), crop, pad and the rest keep the pixels' shape, unknown stays unknown.
TEST(SampleAspect, ResizesKeepTheDisplayShapeAndOtherStepsThePixels) {
  const FrameFormat hdv{AV_PIX_FMT_YUV420P, 1440, 1080};
  auto after = [&](const char* vf, AVRational sar) {
    return sample_aspect_after(build_chain(parse_chain(vf), hdv), sar);
  };
  auto same = [](AVRational a, AVRational b) { return a.num == b.num && a.den == b.den; };
  EXPECT_TRUE(same(after("resize=720x540", {4, 3}), {4, 3}));  // half each way: pixels alike
  EXPECT_TRUE(same(after("resize=640x360", {4, 3}), {1, 1}));  // 16:9 in square pixels
  EXPECT_TRUE(same(after("resize=1920x1080", {4, 3}), {1, 1}));
  EXPECT_TRUE(same(after("crop=w=720:h=1080", {4, 3}), {4, 3}));  // a part: the pixels' shape
  EXPECT_TRUE(same(after("pad=w=1920:h=1080,blur", {4, 3}), {4, 3}));
  EXPECT_TRUE(same(after("resize=720x540,crop=w=360:h=540,resize=720x540", {4, 3}), {2, 3}));
  EXPECT_TRUE(same(after("resize=640x360", {0, 1}), {0, 1}));  // unknown stays unknown
  EXPECT_TRUE(same(after("blur", {16, 15}), {16, 15}));
}
