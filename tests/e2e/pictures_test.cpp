// Pictures as outputs (issue #79 item 5): a .png or .jpg output holds one picture, the first
// frame kept; `--thumbnail T` is the frame shown at T; a numbered name (img-%04d.png) writes one
// picture per frame. Against the ffmpeg tool: the picture is the right frame (far closer to
// FFmpeg's picture of that frame than to its neighbours'; the first frame shown at or after T,
// as FFmpeg's -ss T -frames:v 1), each file decodes as its format, and
// what a picture cannot be is refused before anything is written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

class Pictures : public ScratchSuite<Pictures> {
 public:
  static constexpr const char* kName = "pictures_test";
  static constexpr bool kNeedsFfmpegTool = true;

 protected:
  // 4 s of a moving pattern at 25 fps (each frame differs from the next), GOPs of 30.
  std::string clip() {
    const std::string out = path("moving.mp4");
    if (!fs::exists(out))
      shell_output(fmt::format(
          "ffmpeg -v error -y -f lavfi -i testsrc2=s=320x240:r=25 -t 4 -c:v libx264 -g 30 "
          "-pix_fmt yuv420p '{}' 2>&1",
          out));
    return out;
  }
  // PSNR (dB) of picture `a` against frame `n` (display order) of `video` as zimg makes it RGB
  // (zscale, bilinear, no dither: the oracle scripts/colour-matrix uses; swscale's default
  // is 25 dB from it on testsrc2's sharp chroma), both as planar RGB. A .png is zimg's
  // exactly (inf); a .jpg, JPEG at q 3, 28 dB from it, as FFmpeg's -q:v 3 picture is.
  static double psnr_to_frame(const std::string& a, const std::string& video, int n) {
    const std::string out = shell_output(fmt::format(
        "ffmpeg -v info -filter_threads 1 -i '{}' -i '{}' -filter_complex "
        "'[1:v]select=eq(n\\,{}),zscale=filter=bilinear:dither=none:m=gbr:r=full:min=170m:"
        "rin=limited,format=gbrp[r];[0:v]format=gbrp[a];[a][r]psnr' -frames:v 1 "
        "-f null - 2>&1 | grep -o 'average:[0-9.inf]*'",
        a, video, n));
    if (out.empty()) return -1;
    return out.find("inf") != std::string::npos ? 99 : std::stod(out.substr(8));
  }
  static std::string probe(const std::string& file) {
    return shell_output(fmt::format(
        "ffprobe -v error -show_entries stream=codec_name,width,height -of csv=p=0 '{}'", file));
  }
};

}  // namespace

TEST_F(Pictures, AThumbnailIsTheFrameShownAtItsTime) {
  const std::string in = clip();
  std::mt19937 rng(5);
  for (int trial = 0; trial < 4; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 98)(rng);  // a frame, inside the clip
    const double t = n / 25.0 - 0.01;  // just before it: the first shown at or after t is n
    const std::string ext = trial % 2 ? "jpg" : "png";
    SCOPED_TRACE(fmt::format("--thumbnail {} into .{}", t, ext));
    const std::string out = path(fmt::format("thumb{}.{}", trial, ext));
    const auto r = run_vpipe(fmt::format("transcode '{}' '{}' --thumbnail {}", in, out, t));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(probe(out), fmt::format("{},320,240\n", ext == "png" ? "png" : "mjpeg"));
    const double right = psnr_to_frame(out, in, n);
    EXPECT_GT(right, ext == "png" ? 50.0 : 27.0) << "the frame shown at t";
    EXPECT_GT(right, psnr_to_frame(out, in, n - 1) + 5) << "closer to frame n than to n-1";
    EXPECT_GT(right, psnr_to_frame(out, in, n + 1) + 5) << "closer to frame n than to n+1";
  }
  // A one-picture name alone takes the first frame kept: of a cut, its first.
  const std::string first = path("first.png");
  ASSERT_EQ(run_vpipe(fmt::format("transcode '{}' '{}' --ss-frame 40", in, first)).exit_code, 0);
  EXPECT_GT(psnr_to_frame(first, in, 40), 50.0);
}

TEST_F(Pictures, ANumberedNameWritesOnePicturePerFrame) {
  const std::string in = clip();
  for (const std::string ext : {"png", "jpg"}) {
    const auto r = run_vpipe(
        fmt::format("transcode '{}' '{}' --ss-frame 10 --frames 6", in, path("seq-%03d." + ext)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (int k = 1; k <= 6; ++k) {
      const std::string each = path(fmt::format("seq-{:03d}.{}", k, ext));
      ASSERT_TRUE(fs::exists(each)) << each;
      EXPECT_GT(psnr_to_frame(each, in, 9 + k), ext == "png" ? 50.0 : 27.0) << each;
    }
    EXPECT_FALSE(fs::exists(path("seq-007." + ext)));
  }
  for (const auto& e : fs::directory_iterator(dir()))  // each written whole, under its name
    EXPECT_EQ(e.path().filename().string().find("tmp"), std::string::npos) << e.path();
  // A sequence from a sequence: %02d never writes seq-001.png (three digits, a leading zero),
  // so reading seq-%03d.png and writing seq-%02d.png touches nothing it reads.
  const auto again =
      run_vpipe(fmt::format("transcode '{}' '{}'", path("seq-%03d.png"), path("seq-%02d.png")));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(fs::exists(path("seq-06.png")));
  // A .jpg takes qscale (MJPEG's quality), as its own encoder: 2 is finer than the default 3.
  ASSERT_EQ(run_vpipe(fmt::format("transcode '{}' '{}' --qscale 2", in, path("q2.jpg"))).exit_code,
            0);
  ASSERT_EQ(run_vpipe(fmt::format("transcode '{}' '{}'", in, path("q3.jpg"))).exit_code, 0);
  EXPECT_GT(fs::file_size(path("q2.jpg")), fs::file_size(path("q3.jpg")));
}

TEST_F(Pictures, WhatAPictureCannotBeIsRefusedBeforeAnythingIsWritten) {
  const std::string in = clip();
  const std::pair<std::string, std::string> refused[] = {
      {fmt::format("'{}' '{}' --frames 3", in, path("one.png")), "one picture, not 3 frames"},
      {fmt::format("'{}' '{}' --thumbnail 1 --ss 2", in, path("one.png")), "thumbnail"},
      {fmt::format("'{}' '{}' --thumbnail 1 --frames 2", in, path("one.png")), "thumbnail"},
      {fmt::format("'{}' '{}' --output '{}'", in, path("v.mp4"), path("one.png")),
       "one picture beside other outputs"},
      {fmt::format("'{}' '{}' --output '{}'", in, path("one.png"), path("v.mp4")),
       "one picture beside other outputs"},
      {fmt::format("'{}' '{}' --encoder copy", in, path("one.png")), "a picture output"},
      {fmt::format("'{}' '{}'", in, path("one.apng")), "a picture goes to a .png"},
      {fmt::format("'{}' '{}' --crf 20", in, path("one.jpg")), "encoder mjpeg takes no crf"},
      {fmt::format("'{}' '{}' --bitrate 1M", in, path("one.png")), "encoder png takes no bit"},
  };
  for (const auto& [args, says] : refused) {
    const auto r = run_vpipe("transcode " + args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(path("one.png")));
  EXPECT_FALSE(fs::exists(path("one.jpg")));
  EXPECT_FALSE(fs::exists(path("v.mp4")));
  // A sequence never writes over a picture it reads: seq-%03d.png from seq-001.png is refused.
  const std::string pic = path("in-001.png");
  ASSERT_EQ(run_vpipe(fmt::format("transcode '{}' '{}'", in, pic)).exit_code, 0);
  const std::string before = shell_output("md5sum '" + pic + "'");
  const auto r = run_vpipe(fmt::format("transcode '{}' '{}'", pic, path("in-%03d.png")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("vpipe never writes to what it reads"), std::string::npos) << r.err;
  EXPECT_EQ(shell_output("md5sum '" + pic + "'"), before);
}
