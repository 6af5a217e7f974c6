// Issue #26, the CPU half: the sweep's sizes and chains on the CPU path,
// each frame checked against OpenCV's own functions (not the ref:: code the
// filters call), so CI sees an odd-size misregistration too. The GPU half
// (tests/gpu/sweep_test.cpp) compares the CUDA path with this one.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "media_check.hpp"

using namespace vpipe;
using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

constexpr int kFrames = 3;

cv::Mat mat(const PlaneView& v) {
  return cv::Mat(v.height, v.width, CV_8UC(v.channels), v.data, v.pitch);
}

// A lossless clip (ffv1, YUV420P) of w x h with detail in every plane.
std::string write_clip(const fs::path& path, int w, int h) {
  write_yuv420p_clip(path.string(), "ffv1", w, h, kFrames, [](int i, int p, int x, int y) {
    return p == 0 ? (x * 5 + y * 3 + 11 * i) % 220 + ((x / 4 + y / 4) % 2) * 30
                  : 70 + (x * 3 + y + p * 40 + i) % 110;
  });
  return path.string();
}

// (crop: the w2 x h2 rectangle at (w2/2, h2/2) rounded down to even, as the --vf says)
// (pad: to {wp}x{hp}, the picture at (8, 4) in black, Y 16 and chroma 128; pad-edge: the
// right column and bottom row repeated)
Frame expected(const std::string& chain, const Frame& in, int w2, int h2) {
  const bool sized = chain == "resize" || chain == "crop";
  const bool padded = chain == "pad" || chain == "pad-edge";
  const int wp = (in.format.width + 1) / 2 * 2 + 16, hp = (in.format.height + 1) / 2 * 2 + 8;
  Frame out = Frame::allocate_host({AV_PIX_FMT_YUV420P,
                                    sized    ? w2
                                    : padded ? wp
                                             : in.format.width,
                                    sized    ? h2
                                    : padded ? hp
                                             : in.format.height});
  for (int p = 0; p < 3; ++p) {
    const auto k = static_cast<std::size_t>(p);
    cv::Mat src = mat(in.planes[k]), dst = mat(out.planes[k]);
    if (chain == "resize") {
      cv::resize(src, dst, dst.size(), 0, 0, cv::INTER_AREA);
    } else if (chain == "crop") {
      const int x = w2 / 4 * 2, y = h2 / 4 * 2;  // even offsets
      src(cv::Rect(p ? x / 2 : x, p ? y / 2 : y, dst.cols, dst.rows)).copyTo(dst);
    } else if (chain == "pad") {
      dst.setTo(p ? 128 : 16);
      src.copyTo(dst(cv::Rect(p ? 4 : 8, p ? 2 : 4, src.cols, src.rows)));
    } else if (chain == "pad-edge") {
      cv::copyMakeBorder(src, dst, 0, dst.rows - src.rows, 0, dst.cols - src.cols,
                         cv::BORDER_REPLICATE);
    } else if (chain == "blur") {
      const double sigma = p ? 0.75 : 1.5;  // chroma: sigma scaled with the plane
      const int side = 2 * static_cast<int>(std::ceil(3 * sigma)) + 1;
      cv::GaussianBlur(src, dst, cv::Size(side, side), sigma, sigma, cv::BORDER_REFLECT_101);
    } else if (chain == "box") {  // radius 2, chroma 1
      const int side = p ? 3 : 5;
      cv::blur(src, dst, cv::Size(side, side), cv::Point(-1, -1), cv::BORDER_REFLECT_101);
    } else if (chain == "unsharp" || chain == "sobel" || chain == "eq") {
      if (p > 0) {  // luma only: chroma kept (sobel: neutral)
        if (chain == "sobel")
          dst.setTo(128);
        else
          src.copyTo(dst);
      } else if (chain == "unsharp") {  // sigma 1.5, amount 0.8
        cv::Mat f, b;
        src.convertTo(f, CV_32F);
        cv::GaussianBlur(f, b, cv::Size(11, 11), 1.5, 1.5, cv::BORDER_REFLECT_101);
        cv::addWeighted(f, 1.8, b, -0.8, 0, f);
        f.convertTo(dst, CV_8U);
      } else if (chain == "sobel") {
        cv::Mat gx, gy, m;
        cv::Sobel(src, gx, CV_32F, 1, 0, 3, 1, 0, cv::BORDER_REFLECT_101);
        cv::Sobel(src, gy, CV_32F, 0, 1, 3, 1, 0, cv::BORDER_REFLECT_101);
        cv::magnitude(gx, gy, m);
        m.convertTo(dst, CV_8U);
      } else {  // eq=brightness=0.1:contrast=1.2:gamma=0.9, the formula `vpipe filters` states
        cv::Mat table(1, 256, CV_8U);
        for (int v = 0; v < 256; ++v)
          table.at<std::uint8_t>(v) = cv::saturate_cast<std::uint8_t>(
              255.0 * std::pow(std::clamp((v / 255.0 - 0.5) * 1.2 + 0.5 + 0.1, 0.0, 1.0), 1 / 0.9));
        cv::LUT(src, table, dst);
      }
    } else {  // flip,invert,grayscale
      if (p == 0) {
        cv::flip(src, dst, 1);
        cv::bitwise_not(dst, dst);
      } else {
        dst.setTo(128);
      }
    }
  }
  return out;
}

}  // namespace

TEST(CpuSweep, TheCpuPathMatchesOpenCvOnEverySize) {
  const fs::path dir =
      fs::temp_directory_path() / ("vpipe_cpu_sweep_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // (chain, its --vf, the largest |diff| allowed: OpenCV's 8-bit Gaussian is
  // fixed point, vpipe's reference computes in float, 2 LSB apart at most)
  const std::vector<std::tuple<std::string, std::string, int>> chains = {
      {"pointwise", "flip,invert,grayscale", 0},
      {"blur", "blur=sigma=1.5", 2},
      {"resize", "resize={w2}x{h2}", 0},
      {"crop", "crop=w={w2}:h={h2}:x={x}:y={y}", 0},
      {"box", "box=radius=2", 1},
      {"unsharp", "unsharp=sigma=1.5:amount=0.8", 1},
      {"sobel", "sobel", 1},
      {"eq", "eq=brightness=0.1:contrast=1.2:gamma=0.9", 0},
      {"pad", "pad=w={wp}:h={hp}:x=8:y=4:color=black", 0},
      {"pad-edge", "pad=w={wp}:h={hp}", 0}};
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{
           {2, 2}, {720, 405}, {720, 404}, {1281, 721}, {1920, 1080}, {1920, 1088}}) {
    const std::string clip = write_clip(dir / fmt::format("in-{}x{}.mkv", w, h), w, h);
    std::vector<Frame> in;
    for_each_frame(clip, [&](const Frame& f) { in.push_back(f); });
    ASSERT_EQ(in.size(), static_cast<std::size_t>(kFrames));
    const int w2 = std::max(2, w / 4 * 2), h2 = std::max(2, h / 4 * 2);
    for (const auto& [name, vf_text, allowed] : chains) {
      // OpenCV's kernels are wider than a 1x1 chroma plane
      if ((name == "blur" || name == "box" || name == "unsharp") && w < 8) continue;
      SCOPED_TRACE(fmt::format("{}x{} {}", w, h, name));
      const std::string vf = expand_sweep_vf(vf_text, w, h);
      const auto out = (dir / "out.mkv").string();
      const auto r = run_vpipe("transcode " + clip + " " + out +
                               " --device cpu --encoder ffv1 --vf \"" + vf + "\"");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      std::vector<Frame> got;
      for_each_frame(out, [&](const Frame& f) { got.push_back(f); });
      ASSERT_EQ(got.size(), in.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const Frame want = expected(name, in[i], w2, h2);
        // An odd size is padded to even for the encoder (--fit pad): compare the picture.
        ASSERT_GE(got[i].format.width, want.format.width);
        Frame cropped = Frame::allocate_host(want.format);
        for (int p = 0; p < 3; ++p) {
          const auto k = static_cast<std::size_t>(p);
          const PlaneView& g = got[i].planes[k];
          PlaneView part = g;
          part.width = cropped.planes[k].width;
          part.height = cropped.planes[k].height;
          mat(part).copyTo(mat(cropped.planes[k]));
        }
        EXPECT_LE(max_abs_diff(cropped, want), allowed) << "frame " << i;
      }
    }
  }
  fs::remove_all(dir);
}
