// fps= (#79 item 5) against FFmpeg's own fps filter, on inputs this test makes from a seed:
// constant and variable frame rates (jittered times, a pause), MKV, MP4 and MPEG-TS, B-frames or
// none, every rounding and end rule, with and without a cut (the oracle: trim, then fps). For each
// case the frames vpipe writes (ffv1, lossless) must be FFmpeg's pictures one for one, at FFmpeg's
// times. Plus: --frames counts output frames, a picture sequence at fps=1, and bad rates refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& cmd) {
  std::vector<std::string> v;
  std::string text = shell_output(cmd), line;
  for (char ch : text) {
    if (ch == '\n') {
      v.push_back(line);
      line.clear();
    } else {
      line += ch;
    }
  }
  if (!line.empty()) v.push_back(line);
  return v;
}

// The MD5 of each video picture in `path`, in order.
std::vector<std::string> hashes(const std::string& path) {
  return lines_of(
      "ffmpeg -v error -i " + path +
      " -map 0:v -fps_mode passthrough -f framemd5 - | grep -v '^#' | awk -F, '{print $6}'");
}

// Each video frame's time in `path` (ffprobe's text: an MKV's millisecond times).
std::vector<std::string> times(const std::string& path) {
  return lines_of("ffprobe -v error -select_streams v -show_entries frame=pts_time -of csv=p=0 " +
                  path);
}

class Fps : public ::testing::Test {
 protected:
  static fs::path dir() {
    return fs::temp_directory_path() / ("vpipe_fps_test_" + std::to_string(::getpid()));
  }
  static std::string at(const std::string& name) { return (dir() / name).string(); }
  void SetUp() override { fs::create_directories(dir()); }
  // `seconds` of testsrc2 at `rate` fps, H.264, at `path`.
  static void make_clip(const std::string& path, int rate, double seconds) {
    const std::string cmd = fmt::format(
        "ffmpeg -v error -y -f lavfi -i testsrc2=size=96x64:rate={} -t {} -c:v libx264 {}", rate,
        seconds, path);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  void TearDown() override { fs::remove_all(dir()); }
};

struct Case {
  std::string input, vf, cut, oracle_vf, what;
  std::size_t most_end_ticks = 0;  // after a cut: how far the ends may differ (ticks)
};

// A case from the seed: an input (rate, jitter, pause, container, B-frames) and an fps= with
// random options, and half the time a cut.
Case make_case(std::mt19937& rng, int n, const std::string& input) {
  static const char* rates[] = {"25", "30000/1001", "24", "50", "12", "60", "15/2", "ntsc", "pal"};
  static const double rate_values[] = {25, 30000.0 / 1001, 24, 50, 12, 60, 7.5, 30000.0 / 1001, 25};
  static const char* roundings[] = {"near", "zero", "inf", "down", "up"};
  static const char* containers[] = {"mkv", "mp4", "ts"};
  const int in_rate = std::vector<int>{24, 25, 30, 50, 60}[rng() % 5];
  // A cut ends at its last frame's own end, where FFmpeg's trim ends at the next frame's time
  // (FpsAfterACut below): so a cut is tried on steady times (its ends compared within that
  // rule's reach), and jitter and pauses without one (compared whole).
  const bool cut = rng() % 2 == 0;
  const bool vfr = !cut;
  const std::string container = containers[rng() % 3];
  const std::string setpts =
      vfr ? fmt::format("setpts='(N+0.45*abs(sin(N*7.3+{})))/{}/TB+gte(N,{})*{:.2f}/TB'", n,
                        in_rate, 20 + rng() % 40, 0.1 + (rng() % 100) / 100.0)
          : "null";
  const int bframes = static_cast<int>(rng() % 3);
  Case c;
  c.input = input + "." + container;
  const std::string make = fmt::format(
      "ffmpeg -v error -y -f lavfi -i testsrc2=size=96x64:rate={} -t 3 -vf \"{}\" "
      "-fps_mode passthrough -c:v libx264 -bf {} -g 30 {}",
      in_rate, setpts, bframes, c.input);
  EXPECT_EQ(std::system(make.c_str()), 0) << make;
  const auto which = rng() % std::size(rates);
  std::string fps = fmt::format("fps={}", rates[which]);
  c.most_end_ticks = static_cast<std::size_t>(std::ceil(rate_values[which] / in_rate)) + 1;
  if (rng() % 2) fps += fmt::format(":round={}", roundings[rng() % 5]);
  if (rng() % 3 == 0) fps += ":eof_action=pass";
  c.vf = fps;
  c.oracle_vf = fps;
  if (cut) {
    // Eighths of a second: exact in every time base here, so neither side rounds the shift
    // (a tick that falls exactly on a frame is then the same tick on both).
    const double a = (rng() % 8) / 8.0, b = a + 0.5 + (rng() % 12) / 8.0;
    c.cut = fmt::format(" --ss {:.3f} --to {:.3f}", a, b);
    c.oracle_vf = fmt::format("trim=start={:.3f}:end={:.3f},setpts=PTS-{:.3f}/TB,{}", a, b, a, fps);
  }
  c.what = fmt::format("case {}: {} fps{}{}, {} B-frames, {}{}", n, in_rate, vfr ? " jittered" : "",
                       container == "mkv" ? "" : " " + container, bframes, fps, c.cut);
  return c;
}

TEST_F(Fps, FramesAndTimesAreFfmpegsFpsFiltersOnGeneratedInputs) {
  std::mt19937 rng(20261207);
  for (int n = 0; n < 14; ++n) {
    const Case c = make_case(rng, n, at(fmt::format("in{}", n)));
    const std::string out = at(fmt::format("out{}.mkv", n)), want = at(fmt::format("ff{}.mkv", n));
    const auto r = run_vpipe("transcode " + c.input + " " + out +
                             " --device cpu --encoder ffv1 "
                             "--vf " +
                             c.vf + c.cut);
    ASSERT_EQ(r.exit_code, 0) << c.what << "\n" << r.err;
    const std::string oracle = "ffmpeg -v error -y -i " + c.input + " -map 0:v -vf \"" +
                               c.oracle_vf + "\" -c:v ffv1 " + want;
    ASSERT_EQ(std::system(oracle.c_str()), 0) << oracle;
    auto expected = hashes(want), got = hashes(out);
    auto expected_times = times(want), got_times = times(out);
    ASSERT_FALSE(expected.empty()) << c.what;
    EXPECT_NE(r.err.find(fmt::format("{} out;", got.size())), std::string::npos)
        << c.what << ": the report counts what fps= sent on\n"
        << r.err;
    if (!c.cut.empty()) {
      // After a cut the ends differ by the rule above (the last frame's end, FFmpeg's trim: the
      // next frame's time): less than one input frame, so at most ceil(rate / input rate) + 1
      // ticks; every tick both have is the same frame at the same time.
      const auto n_common = std::min(got.size(), expected.size());
      EXPECT_LE(std::max(got.size(), expected.size()) - n_common, c.most_end_ticks) << c.what;
      got.resize(n_common), expected.resize(n_common);
      got_times.resize(n_common), expected_times.resize(n_common);
    }
    EXPECT_EQ(got, expected) << c.what;
    EXPECT_EQ(got_times, expected_times) << c.what;
  }
}

// vpipe's one rule for the end: the last frame shows for its own duration (its packet's), cut or
// not, as FFmpeg's fps filter ends a whole input. After FFmpeg's trim the end is instead the time
// of the first frame past the cut, so across a pause FFmpeg repeats the last frame past the cut's
// end. Here 25 fps with a 1 s pause after 1.6 s, cut at 0.4 to 2.0: vpipe's frames are FFmpeg's
// up to the last frame's end (1.64 s: 31 ticks of 25 fps from 0.4 s), and stop there.
TEST_F(Fps, FpsAfterACutEndsWithTheLastFramesDuration) {
  const std::string in = at("pause.mkv"), out = at("out.mkv"), want = at("ff.mkv");
  ASSERT_EQ(std::system(("ffmpeg -v error -y -f lavfi -i testsrc2=size=96x64:rate=25 -t 3 -vf "
                         "\"setpts='N/25/TB+gte(N,41)*1/TB'\" -fps_mode passthrough -c:v libx264 "
                         "-bf 0 " +
                         in)
                            .c_str()),
            0);
  const auto r = run_vpipe("transcode " + in + " " + out +
                           " --encoder ffv1 --ss 0.4 --to 2 "
                           "--vf fps=25");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(std::system(("ffmpeg -v error -y -i " + in +
                         " -vf trim=start=0.4:end=2,"
                         "setpts=PTS-0.4/TB,fps=25 -c:v ffv1 " +
                         want)
                            .c_str()),
            0);
  const auto got = hashes(out), ffmpeg = hashes(want);
  ASSERT_EQ(got.size(), 31u);
  ASSERT_GT(ffmpeg.size(), got.size()) << "FFmpeg repeats the last frame into the pause";
  EXPECT_TRUE(std::equal(got.begin(), got.end(), ffmpeg.begin()));
}

TEST_F(Fps, FramesCountsTheOutputsFramesAsFfmpegsDoes) {
  const std::string in = at("in.mp4"), out = at("out.mkv"), want = at("ff.mkv");
  make_clip(in, 30, 4);
  for (const char* vf : {"fps=2", "fps=75"}) {
    const auto r =
        run_vpipe("transcode " + in + " " + out + " --encoder ffv1 --frames 7 --vf " + vf);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(std::system(
                  ("ffmpeg -v error -y -i " + in + " -vf " + vf + " -frames:v 7 -c:v ffv1 " + want)
                      .c_str()),
              0);
    EXPECT_EQ(hashes(out).size(), 7u) << vf;
    EXPECT_EQ(hashes(out), hashes(want)) << vf;
    EXPECT_EQ(times(out), times(want)) << vf;
  }
}

// Two rate changes in one chain (a filter between), and one that leaves no frame: FFmpeg's
// frames for the first; a failure naming fps= for the second, not an empty file.
TEST_F(Fps, TwoRateChangesAndOneThatKeepsNothing) {
  const std::string in = at("in.mp4"), out = at("out.mkv"), want = at("ff.mkv");
  make_clip(in, 25, 4);
  for (const char* vf :
       {"fps=10,fps=50", "fps=50,crop=w=64:h=64:x=0:y=0,fps=10", "fps=10,fps=10"}) {
    const auto r = run_vpipe("transcode " + in + " " + out + " --encoder ffv1 --vf " + vf);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(std::system(
                  (std::string("ffmpeg -v error -y -i ") + in + " -vf " + vf + " -c:v ffv1 " + want)
                      .c_str()),
              0);
    EXPECT_EQ(hashes(out), hashes(want)) << vf;
    EXPECT_EQ(times(out), times(want)) << vf;
  }
  const auto r = run_vpipe("transcode " + in + " " + out + "x.mkv --encoder ffv1 --vf fps=0.1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fps=0.1: no frame falls on a tick"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out + "x.mkv"));
}

TEST_F(Fps, APictureSequenceAtOneASecond) {
  const std::string in = at("in.mp4");
  make_clip(in, 25, 4.5);
  const auto r = run_vpipe("transcode " + in + " " + at("img-%02d.png") + " --vf fps=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // FFmpeg's fps=1 of 4.5 s: ticks 0 … 3 and 4 (4.5 rounds to 5): five pictures.
  for (int k = 1; k <= 5; ++k) EXPECT_TRUE(fs::exists(at(fmt::format("img-{:02d}.png", k)))) << k;
  EXPECT_FALSE(fs::exists(at("img-06.png")));
}

TEST_F(Fps, ARateThatIsNoneIsRefusedNamingIt) {
  for (const char* bad : {"fps=0", "fps=-5", "fps=abc", "fps=2000", "fps=25:round=sideways"}) {
    const auto r =
        run_vpipe(std::string("transcode ") + kSample + " " + at("x.mkv") + " --vf " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("fps"), std::string::npos) << bad << "\n" << r.err;
    EXPECT_FALSE(fs::exists(at("x.mkv"))) << bad;
  }
}

}  // namespace
