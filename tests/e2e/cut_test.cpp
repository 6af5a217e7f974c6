// Cuts (issue #43): --ss/--to/--duration and --ss-frame/--to-frame are exact to
// the frame. The oracle is FFmpeg's own decode of the whole input through its
// trim filter (no seek), compared frame by frame (framemd5 of the pictures);
// vpipe seeks to the keyframe before the start and drops what is shown before
// it. Inputs: H.264 with B-frames and open GOPs (MP4 and MPEG-TS), HEVC open
// GOPs, a variable-rate MKV with a 1.3 s pause; audio must start and end with
// the video within one audio frame.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto nl = text.find('\n', at);
    v.push_back(text.substr(at, nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return v;
}

// The MD5 of every picture FFmpeg decodes with `args` (input options, -i, filters).
std::vector<std::string> picture_hashes(const std::string& args) {
  return lines(shell_output("ffmpeg -v error " + args +
                            " -map 0:v -fps_mode passthrough -f framemd5 - | grep -v '^#' | "
                            "awk -F, '{print $6}'"));
}

// ffprobe's times (seconds) of one stream's packets, in file order.
std::vector<double> packet_times(const std::string& path, const std::string& stream,
                                 const std::string& field = "pts_time") {
  std::vector<double> t;
  for (const auto& l :
       lines(shell_output("ffprobe -v error -select_streams " + stream +
                          " -show_entries packet=" + field + " -of csv=p=0 " + path)))
    if (!l.empty() && l != "N/A") t.push_back(std::stod(l));
  std::sort(t.begin(), t.end());
  return t;
}

class Cut : public ::testing::Test {
 protected:
  // One folder per process: CTest runs each test as its own process, two at once.
  static fs::path dir() {
    return fs::temp_directory_path() / ("vpipe_cut_test_" + std::to_string(::getpid()));
  }
  static std::string src(const std::string& name) { return (dir() / name).string(); }
  // The inputs a test names, made on first use: 6 s each, 320x240 at 25 fps,
  // AAC at 48 kHz (1024-sample frames).
  static void make(const std::string& name) {
    if (fs::exists(src(name))) return;
    fs::create_directories(dir());
    const std::string lavfi =
        "ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -f lavfi -i "
        "sine=frequency=440:sample_rate=48000 -t 6 ";
    std::string cmd;
    if (name == "h264.mp4")
      cmd = lavfi + "-c:v libx264 -bf 3 -g 50 -x264-params open-gop=1 -c:a aac " + src(name);
    if (name == "h264.ts") {
      make("h264.mp4");
      cmd = "ffmpeg -v error -y -i " + src("h264.mp4") + " -c copy -f mpegts " + src(name);
    }
    if (name == "hevc.mp4")
      cmd = lavfi +
            "-c:v libx265 -x265-params bframes=4:keyint=40:open-gop=1:log-level=error "
            "-tag:v hvc1 -c:a aac " +
            src(name);
    if (name == "vfr.mkv")  // a pause of 1.3 s after frame 100, then a rate that slows
      cmd =
          "ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=30 -t 6 -vf "
          "\"setpts='N/30/TB+if(gt(N,100),1.3/TB,0)+if(gt(N,120),0.01*(N-120)/TB,0)'\" "
          "-fps_mode vfr -c:v libx264 -bf 2 " +
          src(name);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() { fs::remove_all(dir()); }
  void SetUp() override {
    VPIPE_NEED_FFMPEG_TOOL();
    fs::create_directories(dir());
  }
  // An input, made on first use.
  static std::string input(const std::string& name) {
    make(name);
    return src(name);
  }
  // vpipe's cut of `in` into a lossless file; its pictures' hashes.
  std::vector<std::string> cut(const std::string& in, const std::string& args,
                               const std::string& out_name = "out.mkv") {
    const std::string out = src(out_name);
    const auto r =
        run_vpipe("transcode " + input(in) + " " + out + " --device cpu --encoder ffv1 " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return picture_hashes("-i " + out);
  }
};

TEST_F(Cut, TimesAreExactOnOpenGopsWithBFrames) {
  const auto oracle = picture_hashes("-i " + input("h264.mp4") + " -vf trim=start=1.3:end=3.7");
  ASSERT_EQ(oracle.size(), 60u);  // 1.32 … 3.68 s
  EXPECT_EQ(cut("h264.mp4", "--ss 1.3 --to 3.7"), oracle);
  EXPECT_EQ(cut("h264.mp4", "--ss 00:00:01.300 --duration 2.4"), oracle);
  EXPECT_EQ(cut("h264.mp4", "--ss 1.3 --to 3.7 --decode-sessions 3"), oracle);
}

TEST_F(Cut, FrameNumbersAreExact) {
  const auto oracle =
      picture_hashes("-i " + input("h264.mp4") + " -vf trim=start_frame=33:end_frame=90");
  ASSERT_EQ(oracle.size(), 57u);
  EXPECT_EQ(cut("h264.mp4", "--ss-frame 33 --to-frame 90"), oracle);
  // Past the last frame: to the end.
  EXPECT_EQ(cut("h264.mp4", "--ss-frame 140 --to-frame 100000"),
            picture_hashes("-i " + input("h264.mp4") + " -vf trim=start_frame=140"));
}

TEST_F(Cut, HevcOpenGopsInSegments) {
  const auto oracle = picture_hashes("-i " + input("hevc.mp4") + " -vf trim=start=2.1:end=3.6");
  ASSERT_EQ(oracle.size(), 37u);
  EXPECT_EQ(cut("hevc.mp4", "--ss 2.1 --duration 1.5"), oracle);
  EXPECT_EQ(cut("hevc.mp4", "--ss 2.1 --duration 1.5 --decode-sessions 3"), oracle);
}

TEST_F(Cut, VariableRateAcrossAPause) {
  // 1.7 … 4.3 s holds the pause (frame 100 at 3.33 s, frame 101 at 4.7 s).
  const auto oracle = picture_hashes("-i " + input("vfr.mkv") + " -vf trim=start=1.7:end=4.8");
  ASSERT_GT(oracle.size(), 40u);
  EXPECT_EQ(cut("vfr.mkv", "--ss 1.7 --to 4.8"), oracle);
  EXPECT_EQ(cut("vfr.mkv", "--ss-frame 70 --to-frame 110"),
            picture_hashes("-i " + input("vfr.mkv") + " -vf trim=start_frame=70:end_frame=110"));
}

// MPEG-TS starts at 1.4 s and its seek lands near, not before: times count
// from the input's start (as -ss does), and the oracle keeps the file's own
// timestamps (-copyts) to trim at the same absolute times.
TEST_F(Cut, MpegTsCountsFromItsStartAndCopytsKeepsTimes) {
  const double origin = std::stod(shell_output(
      "ffprobe -v error -show_entries format=start_time -of csv=p=0 " + input("h264.ts")));
  const auto oracle = picture_hashes(fmt::format("-copyts -i {} -vf trim=start={:.6f}:end={:.6f}",
                                                 input("h264.ts"), origin + 1.3, origin + 3.7));
  ASSERT_EQ(oracle.size(), 60u);
  EXPECT_EQ(cut("h264.ts", "--ss 1.3 --to 3.7"), oracle);
  EXPECT_EQ(cut("h264.ts", "--ss 1.3 --to 3.7 --copyts", "kept.mkv"), oracle);
  const auto kept = packet_times(src("kept.mkv"), "v");
  ASSERT_FALSE(kept.empty());
  EXPECT_GE(kept.front(), origin + 1.3 - 0.001);  // the input's clock, not zero
  EXPECT_LT(kept.front(), origin + 1.3 + 0.04);
}

// Audio (copied AAC) starts within one audio frame of the cut and ends with
// the video; the video's timestamps start at zero.
TEST_F(Cut, AudioStaysInSyncWithinOneAudioFrame) {
  const std::string out = src("sync.mp4");
  const auto r = run_vpipe("transcode " + input("h264.mp4") + " " + out +
                           " --device cpu --ss 1.3 --to 3.7 --report " + src("sync.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double audio_frame = 1024.0 / 48000;
  const auto video = packet_times(out, "v"), audio = packet_times(out, "a");
  ASSERT_EQ(video.size(), 60u);
  ASSERT_FALSE(audio.empty());
  EXPECT_NEAR(video.front(), 0.02, 0.002);  // the first frame shown at or after 1.3 s: 1.32
  EXPECT_GE(audio.front(), -0.001);
  EXPECT_LT(audio.front(), audio_frame);
  EXPECT_NEAR(audio.back() + audio_frame, 2.4, audio_frame);  // the span's end
  std::ifstream f(src("sync.json"));
  const auto report = nlohmann::json::parse(f);
  EXPECT_EQ(report["frames"]["errors"], 0);
}

// --loop repeats the span, timestamps continuing without a gap.
TEST_F(Cut, LoopRepeatsTheSpan) {
  auto once = picture_hashes("-i " + input("h264.mp4") + " -vf trim=start=1.3:end=3.7");
  std::vector<std::string> thrice;
  for (int i = 0; i < 3; ++i) thrice.insert(thrice.end(), once.begin(), once.end());
  EXPECT_EQ(cut("h264.mp4", "--ss 1.3 --to 3.7 --loop 3", "loop.mkv"), thrice);
  EXPECT_EQ(cut("h264.mp4", "--ss 1.3 --to 3.7 --loop 3 --decode-sessions 3"), thrice);
  const auto t = packet_times(src("loop.mkv"), "v");
  ASSERT_EQ(t.size(), 180u);
  for (std::size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], 0.04, 0.0015) << i;
}

TEST_F(Cut, RefusalsNameTheProblem) {
  const std::string in = input("h264.mp4"), out = src("refused.mkv");
  auto r = run_vpipe("transcode " + in + " " + out + " --ss 3 --to 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not after the start"), std::string::npos) << r.err;
  r = run_vpipe("transcode " + in + " " + out + " --to 3 --duration 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give one end"), std::string::npos) << r.err;
  r = run_vpipe("transcode " + in + " " + out + " --ss 1:xx");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("1:xx"), std::string::npos) << r.err;
  r = run_vpipe("transcode udp://127.0.0.1:9 " + out + " --ss 5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("duration only"), std::string::npos) << r.err;
  r = run_vpipe("transcode " + in + " " + out + " --ss 60");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("lasts 6"), std::string::npos) << r.err;
  r = run_vpipe("transcode " + in + " " + out + " --ss 5.99");  // the last frame shows at 5.96
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no frame is shown inside the cut: 5.990 s to the end"), std::string::npos)
      << r.err;
  r = run_vpipe("transcode " + in + " " + out + " --ss-frame 150");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("the input has 150 frames"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
