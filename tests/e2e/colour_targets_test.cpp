// Every conversion by one rule (#79 item 3): each 8-bit RGB target (bgr24, bgra, argb, gbrp…,
// every one FFmpeg lists) carries the samples of vpipe's rgb24, whose chroma siting the colour
// matrix checks against zimg, not swscale's own bicubic chroma (up to 54 levels apart on this
// footage before); and grey is full range, FFmpeg's picture byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  return fs::temp_directory_path() / ("vpipe_colour_targets_" + std::to_string(::getpid()));
}

// The md5 of `path`'s first picture as rgb24 (FFmpeg's reordering of RGB samples is exact).
std::string rgb24_md5(const std::string& path) {
  return shell_output("ffmpeg -v error -i " + path +
                      " -frames:v 1 -pix_fmt rgb24 -f md5 - 2>/dev/null");
}

// At the input's size and after a resize (fused into the same pass as resize,format=rgb24).
TEST(ColourTargets, EveryEightBitRgbFormatCarriesRgb24sSamples) {
  fs::create_directories(scratch());
  const auto out = [](const std::string& f) { return (scratch() / (f + ".nut")).string(); };
  for (const std::string before : {"", "resize=320x180,"}) {
    const std::string common =
        " --device cpu --frames 1 --audio none --encoder rawvideo --vf " + before + "format=";
    ASSERT_EQ(run_vpipe("transcode " + kSample + " " + out("rgb24") + common + "rgb24").exit_code,
              0);
    const std::string want = rgb24_md5(out("rgb24"));
    ASSERT_FALSE(want.empty());
    int tried = 0;
    for (const AVPixFmtDescriptor* d = nullptr; (d = av_pix_fmt_desc_next(d));) {
      bool eight = d->nb_components >= 3;
      for (int c = 0; c < d->nb_components; ++c) eight = eight && d->comp[c].depth == 8;
      if (!(d->flags & AV_PIX_FMT_FLAG_RGB) ||
          (d->flags & (AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BITSTREAM)) || !eight ||
          std::string(d->name) == "rgb24")
        continue;
      const auto r = run_vpipe("transcode " + kSample + " " + out(d->name) + common + d->name);
      if (r.exit_code != 0) {  // a format NUT's raw video cannot hold is no conversion to judge
        EXPECT_NE(r.err.find(d->name), std::string::npos) << r.err;
        continue;
      }
      ++tried;
      EXPECT_EQ(rgb24_md5(out(d->name)), want) << before << d->name;
    }
    EXPECT_GE(tried, 8) << "bgr24, bgra, argb, abgr, rgb0, bgr0, 0rgb, 0bgr, gbrp at least";
  }
  fs::remove_all(scratch());
}

TEST(ColourTargets, GreyIsFullRangeAsFfmpegWritesIt) {
  fs::create_directories(scratch());
  const std::string mine = (scratch() / "grey.png").string(),
                    theirs = (scratch() / "ffmpeg.png").string();
  const auto r = run_vpipe("transcode " + kSample + " " + mine + " --vf format=gray");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(
      std::system(
          ("ffmpeg -v error -y -i " + kSample + " -frames:v 1 -vf format=gray " + theirs).c_str()),
      0);
  const auto md5 = [](const std::string& p) {
    return shell_output("ffmpeg -v error -i " + p + " -f md5 - 2>/dev/null");
  };
  EXPECT_EQ(md5(mine), md5(theirs));
  fs::remove_all(scratch());
}

}  // namespace
