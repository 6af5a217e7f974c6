// One decode, many outputs (issue #44): `vpipe transcode IN OUT[:key=value…]
// --output PATH[:key=value…]…`. Each output has its own chain and encoder, the
// input is decoded once, the audio goes to every output, an output's frames
// are the frames a run of that output alone gives, and an output that fails
// (its file grows past the limit: a full disk) is reported and removed while
// the others finish. ffprobe and libavformat, not vpipe, read the outputs.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "media_check.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

class Outputs : public ScratchSuite<Outputs> {
 public:
  static constexpr const char* kName = "outputs_test";
  static constexpr bool kNeedsFfmpegTool = true;

 protected:
  // 4 s at 25 fps, 640x360 H.264 with AAC.
  static std::string input() {
    const std::string p = path("in.mp4");
    if (fs::exists(p)) return p;
    const std::string cmd =
        "ffmpeg -v error -y -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i "
        "sine=frequency=440 -t 4 -c:v libx264 -g 25 -c:a aac -shortest " +
        p;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return p;
  }
  static nlohmann::json report(const std::string& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
  }
  // Every decoded frame of `p`, as bytes (to compare two outputs frame by frame).
  static std::vector<std::string> frames_of(const std::string& p) {
    std::vector<std::string> out;
    for_each_frame(p, [&](const vpipe::Frame& f) {
      std::string bytes;
      for (int k = 0; k < f.num_planes; ++k) {
        const auto& pl = f.planes[static_cast<std::size_t>(k)];
        for (int y = 0; y < pl.height; ++y)
          bytes.append(reinterpret_cast<const char*>(pl.data) + y * pl.pitch,
                       static_cast<std::size_t>(pl.width * pl.channels));
      }
      out.push_back(std::move(bytes));
    });
    return out;
  }
};

}  // namespace

TEST_F(Outputs, OneDecodeFeedsEveryOutputWithItsOwnChainEncoderAndTheAudio) {
  const auto in = input();
  const auto r =
      run_vpipe("transcode " + in + " " + path("a.mp4") + ":vf=resize=320x180 --output " +
                path("b.mkv") + ":vf=resize=160x90:encoder=mpeg4 --output " + path("c.mp4") +
                ":crf=30 --report " + path("r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const struct {
    const char* name;
    int width, height;
    const char* codec;
  } want[] = {
      {"a.mp4", 320, 180, "h264"}, {"b.mkv", 160, 90, "mpeg4"}, {"c.mp4", 640, 360, "h264"}};
  for (const auto& w : want) {
    const auto s = summarize(path(w.name));
    EXPECT_EQ(s.video_packets, 100) << w.name;
    EXPECT_EQ(s.width, w.width) << w.name;
    EXPECT_EQ(s.height, w.height) << w.name;
    EXPECT_EQ(s.video_codec, w.codec) << w.name;
    EXPECT_EQ(s.audio_streams, 1) << w.name << ": the audio goes to every output";
    EXPECT_GT(s.audio_packets, 150) << w.name;
  }
  const auto j = report(path("r.json"));
  EXPECT_EQ(j["frames"]["decoded"].get<int>(), 100) << "decoded once, not once per output";
  ASSERT_EQ(j["outputs"].size(), 3u);
  for (const auto& o : j["outputs"]) {
    EXPECT_EQ(o["frames"].get<int>(), 100) << o.dump();
    EXPECT_EQ(o["status"], "ok");
    EXPECT_GE(o["fork_wait_s"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["outputs"][1]["encoder"], "mpeg4");
  // An output's frames are those of a run of it alone (mpeg4 is deterministic).
  ASSERT_EQ(run_vpipe("transcode " + in + " " + path("b_alone.mkv") +
                      " --vf resize=160x90 --encoder mpeg4")
                .exit_code,
            0);
  const auto shared = frames_of(path("b.mkv"));
  EXPECT_EQ(shared.size(), 100u);
  EXPECT_TRUE(shared == frames_of(path("b_alone.mkv")))
      << "the output of a fork differs from the same output alone";
}

// A file size limit (RLIMIT_FSIZE) stands in for a full disk: the big lossless
// output passes it and fails its writes; the small ones stay under it.
TEST_F(Outputs, OneThatFailsIsReportedAndRemovedAndTheOthersFinish) {
  const auto in = input();
  const auto r =
      run_vpipe("transcode " + in + " " + path("f1.mp4") + ":vf=resize=320x180 --output " +
                    path("f2.mkv") + ":vf=resize=160x90:encoder=mpeg4 --output " + path("big.mp4") +
                    ":crf=0 --report " + path("f.json"),
                "sh -c 'ulimit -f 1000; exec \"$0\" \"$@\"'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("big.mp4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("big.mp4"))) << "a failed output leaves no partial file";
  for (const char* ok : {"f1.mp4", "f2.mkv"}) {
    const auto s = summarize(path(ok));
    EXPECT_EQ(s.video_packets, 100) << ok << ": finished despite the other's failure";
    EXPECT_EQ(s.audio_streams, 1) << ok;
  }
  const auto j = report(path("f.json"));
  ASSERT_EQ(j["outputs"].size(), 3u);
  EXPECT_EQ(j["outputs"][0]["status"], "ok");
  EXPECT_EQ(j["outputs"][1]["status"], "ok");
  EXPECT_NE(j["outputs"][2]["status"].get<std::string>().find("failed"), std::string::npos);
}

// A rendition's codec is asked of its segments' container (HLS: MPEG-TS, DASH: MP4 or WebM),
// before anything is written: VP9 in HLS was written as bin_data and exited 0. The refusal
// names the rendition where the ladder puts it, not the staging folder, and a ladder's folder
// this run made is gone. Each output's plan notes (fit, encoder) are named by its path.
TEST_F(Outputs, ARenditionItsSegmentsCannotHoldIsRefusedByItsOwnName) {
  const auto in = input();
  for (const auto& [ladder, enc, where] :
       {std::tuple{"hls", "libvpx-vp9", "/b/index.m3u8: hls's mpegts segments cannot hold vp9"},
        std::tuple{"dash", "ffv1", "/b/manifest.mpd: dash's mp4 segments cannot hold ffv1"}}) {
    const auto dir = path(std::string("refused_") + ladder);
    const auto r = run_vpipe("transcode " + in + " a --output b:encoder=" + enc + " --" + ladder +
                             " " + dir + " --device cpu");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(dir + where), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(".vpipe-partial"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir)) << "the folder this run made, left empty";
  }
  const std::string odd =
      env_or("VPIPE_MEDIA_DIR", kBuiltinMediaDir) + std::string("/odd-720x405.mpg");
  const auto r = run_vpipe("transcode " + odd + " " + path("n1.mkv") + ":encoder=ffv1 --output " +
                           path("n2.mkv") + ":encoder=libx264 --frames 5 --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(path("n2.mkv") + ": fit pad: 720x405 padded to 720x406"), std::string::npos)
      << "output 2's note, named" << r.err;
}

// The run's --vf runs once, before the fork; each output's chain after it. The
// frames are those of each output alone with the whole chain (mpeg4: deterministic).
TEST_F(Outputs, AChainSharedBeforeTheForkRunsOnceAndGivesEachOutputsFrames) {
  const auto in = input();
  const auto r = run_vpipe(
      "transcode " + in + " " + path("x.mkv") + ":vf=resize=320x180 --output " + path("y.mkv") +
      " --vf blur=sigma=1.5,invert --encoder mpeg4 --report " + path("x.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("blur=sigma=1.5,invert run once, before the fork"), std::string::npos)
      << r.err;
  int blurs = 0;
  const auto stages = report(path("x.json"))["stages"];
  for (const auto& s : stages) blurs += s["name"].get<std::string>() == "filter:blur=sigma=1.5";
  EXPECT_EQ(blurs, 1) << "the shared chain is one stage, not one per output: " << stages.dump();
  for (const auto& [out, chain] : {std::pair{"x.mkv", "blur=sigma=1.5,invert,resize=320x180"},
                                   std::pair{"y.mkv", "blur=sigma=1.5,invert"}}) {
    const std::string alone = path(std::string("alone_") + out);
    ASSERT_EQ(run_vpipe("transcode " + in + " " + alone + " --vf " + chain + " --encoder mpeg4")
                  .exit_code,
              0);
    const auto shared = frames_of(path(out));
    EXPECT_EQ(shared.size(), 100u) << out;
    EXPECT_TRUE(shared == frames_of(alone)) << out << " differs from the same chain alone";
  }
}

namespace {

// A playlist's segment files, in order (the lines that are not tags).
std::vector<std::string> segments_of(const fs::path& playlist) {
  std::ifstream in(playlist);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.push_back((playlist.parent_path() / line).string());
  return out;
}

// The first video packet of a segment: its pts (seconds) and whether it is a keyframe.
std::pair<double, bool> first_video_packet(const std::string& segment) {
  const auto line = shell_output(
      "ffprobe -v error -select_streams v:0 -show_entries packet=pts_time,flags -of csv=p=0 "
      "-read_intervals %+#1 " +
      segment + " | head -1");
  const auto comma = line.find(',');
  if (comma == std::string::npos) return {-1, false};
  return {std::stod(line.substr(0, comma)), line[comma + 1] == 'K'};
}

// The ladder of the two tests below (360p, 180p and 90p of the 100-frame
// input, 0.6 s segments): each rendition's segments (`segments(name)`, each a
// playable file) start on a keyframe, hold its 100 frames, and start at the
// same pts in every rendition, 0.6 s apart.
void expect_aligned_ladder(const std::function<std::vector<std::string>(const char*)>& segments) {
  std::vector<std::vector<double>> starts;
  for (const char* name : {"360p", "180p", "90p"}) {
    const auto segs = segments(name);
    EXPECT_EQ(segs.size(), 7u) << name << ": 100 frames in 15-frame segments";
    std::vector<double> at;
    int frames = 0;
    for (const auto& s : segs) {
      const auto [pts, key] = first_video_packet(s);
      EXPECT_TRUE(key) << s << " does not start with a keyframe";
      at.push_back(pts);
      frames += summarize(s).video_packets;
    }
    EXPECT_EQ(frames, 100) << name;
    starts.push_back(at);
  }
  for (std::size_t k = 1; k < starts.size(); ++k) {
    ASSERT_EQ(starts[k].size(), starts[0].size());
    for (std::size_t i = 0; i < starts[0].size(); ++i)
      EXPECT_NEAR(starts[k][i], starts[0][i], 1e-6) << "rendition " << k << " segment " << i;
  }
  for (std::size_t i = 1; i < starts[0].size(); ++i)
    EXPECT_NEAR(starts[0][i] - starts[0][i - 1], 0.6, 1e-6) << "segment " << i;
}

}  // namespace

// An HLS ladder (--hls): every rendition's segments start on a keyframe at the
// same pts as every other's, though the input's keyframes (every 25 frames) do
// not fall on the 0.6 s (15-frame) segments and the renditions use different
// encoders; FFmpeg's own HLS demuxer reads the master playlist and finds every
// rendition with its size, and each rendition's frames add up to the input's.
TEST_F(Outputs, AnHlsLadderHasAlignedSegmentsThatStartOnKeyframes) {
  const auto in = input();
  const auto hls = Outputs::dir() / "hls";
  const auto r =
      run_vpipe("transcode " + in + " 360p --output 180p:vf=resize=320x180 --output " +
                "90p:vf=resize=160x90:encoder=mpeg4 --hls " + hls.string() + " --segment 0.6s");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_aligned_ladder([&](const char* name) { return segments_of(hls / name / "index.m3u8"); });
  const auto master = (hls / "master.m3u8").string();
  const auto streams = shell_output(
      "ffprobe -v error -select_streams v -show_entries stream=width,height -of csv=p=0 " + master);
  EXPECT_NE(streams.find("640,360"), std::string::npos) << streams;
  EXPECT_NE(streams.find("320,180"), std::string::npos) << streams;
  EXPECT_NE(streams.find("160,90"), std::string::npos) << streams;
  std::ifstream m(master);
  const std::string text((std::istreambuf_iterator<char>(m)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("BANDWIDTH="), std::string::npos);
  EXPECT_NE(text.find("RESOLUTION=160x90\n90p/index.m3u8"), std::string::npos) << text;
}

// Issue #79 item 6: the master names each rendition's codecs as RFC 6381 does, read from its
// segments: H.264's profile_idc and level_idc, HEVC's profile and level (ffprobe's numbers are
// the oracle: H.264 profile_idc 66/77/100, HEVC general_level_idc as is), AAC LC as mp4a.40.2.
// A rendition whose codec HLS has no such name for (MPEG-4 part 2) carries no CODECS at all.
TEST_F(Outputs, AnHlsMasterNamesEachRenditionsCodecs) {
  if (!avcodec_find_encoder_by_name("libx265")) GTEST_SKIP() << "this FFmpeg has no libx265";
  const auto hls = Outputs::dir() / "hls-codecs";
  const std::vector<std::string> renditions = {
      "base:encoder=libx264:profile=baseline", "main:encoder=libx264:profile=main",
      "high:encoder=libx264:profile=high", "hevc:encoder=libx265", "mp4v:encoder=mpeg4"};
  std::string args = "transcode " + input() + " " + renditions[0];
  for (std::size_t k = 1; k < renditions.size(); ++k) args += " --output " + renditions[k];
  const auto r = run_vpipe(args + " --vf resize=320x180 --hls " + hls.string() + " --segment 1s");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream m(hls / "master.m3u8");
  const std::string text((std::istreambuf_iterator<char>(m)), std::istreambuf_iterator<char>());
  for (const std::string name : {"base", "main", "high", "hevc", "mp4v"}) {
    SCOPED_TRACE(name);
    const auto at = text.find("\n" + name + "/index.m3u8");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line =
        text.substr(text.rfind("#EXT-X-STREAM-INF", at), at - text.rfind("#EXT-X-STREAM-INF", at));
    const auto probe = [&](const std::string& entries, const char* stream) {
      return shell_output("ffprobe -v error -select_streams " + std::string(stream) +
                          " -show_entries " + entries + " -of csv=p=0 " +
                          (hls / name / "seg_00000.ts").string());
    };
    if (name == "mp4v") {
      EXPECT_EQ(line.find("CODECS"), std::string::npos) << line;
      continue;
    }
    const auto v = probe("stream=profile,level", "v");
    const int level = std::atoi(v.substr(v.find(',') + 1).c_str());
    std::string want;
    if (name == "hevc") {
      ASSERT_EQ(v.substr(0, v.find(',')), "Main");
      want = fmt::format("hvc1.1.6.L{}.", level);
    } else {
      const int idc = name == "base" ? 66 : name == "main" ? 77 : 100;
      want = fmt::format("avc1.{:02x}", idc);
      EXPECT_NE(line.find(fmt::format("{:02x},mp4a", level)), std::string::npos) << line << v;
    }
    EXPECT_NE(line.find("CODECS=\"" + want), std::string::npos) << line << " ffprobe: " << v;
    EXPECT_NE(line.find(",mp4a.40.2\""), std::string::npos) << line;
    EXPECT_EQ(probe("stream=profile", "a").substr(0, 3), "LC\n");  // (then its program's copy)
  }
}

namespace {

// A DASH rendition's video segments, each as a playable file (its
// initialization segment, then the chunk), in order.
std::vector<std::string> dash_segments_of(const fs::path& folder) {
  std::vector<std::string> chunks;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.path().filename().string().rfind("chunk-stream0-", 0) == 0)
      chunks.push_back(e.path().string());
  std::sort(chunks.begin(), chunks.end());
  std::vector<std::string> out;
  for (const auto& c : chunks) {
    const auto whole = c + ".whole.mp4";
    std::ofstream f(whole, std::ios::binary);
    for (const auto& part : {(folder / "init-stream0.m4s").string(), c}) {
      std::ifstream in(part, std::ios::binary);
      f << in.rdbuf();
    }
    out.push_back(whole);
  }
  return out;
}

}  // namespace

// A DASH ladder (--dash): as the HLS one, every rendition's segments start on
// a keyframe at the same pts as every other's; DIR/manifest.mpd lists each
// rendition's Representation, and FFmpeg's own DASH demuxer reads it (an
// absolute path: it resolves a relative one's segments wrongly).
TEST_F(Outputs, ADashLadderHasAlignedSegmentsThatStartOnKeyframes) {
  const auto in = input();
  const auto dash = fs::absolute(Outputs::dir() / "dash");
  const auto r =
      run_vpipe("transcode " + in + " 360p --output 180p:vf=resize=320x180 --output " +
                "90p:vf=resize=160x90:encoder=mpeg4 --dash " + dash.string() + " --segment 0.6s");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_aligned_ladder([&](const char* name) { return dash_segments_of(dash / name); });
  const auto manifest = (dash / "manifest.mpd").string();
  const auto streams = shell_output(
      "ffprobe -v error -show_entries stream=codec_type,width,height -of csv=p=0 " + manifest);
  EXPECT_NE(streams.find("video,640,360"), std::string::npos) << streams;
  EXPECT_NE(streams.find("video,320,180"), std::string::npos) << streams;
  EXPECT_NE(streams.find("video,160,90"), std::string::npos) << streams;
  EXPECT_NE(streams.find("audio"), std::string::npos) << streams;
  std::ifstream m(manifest);
  const std::string text((std::istreambuf_iterator<char>(m)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("media=\"90p/chunk-stream0-$Number%05d$.m4s\""), std::string::npos) << text;
}

namespace {

// A filter that throws at one frame: a branch's filter failing mid-run.
class FailAt final : public vpipe::Filter {
 public:
  explicit FailAt(int frame) : frame_(frame) {}
  static vpipe::FilterInfo info() {
    return {
        .name = "test_fail_at",
        .summary = "Passes frames, then throws at frame N (a test's failing filter).",
        .params = {{"frame", vpipe::ParamType::kInt, "20", 0, 1e9, "the frame that throws", {}}},
        .create =
            [](const vpipe::ParamValues& p) {
              return std::make_unique<FailAt>(static_cast<int>(p.get_int("frame")));
            },
        .formats = "any",
        .example = "test_fail_at=frame=20"};
  }
  vpipe::FrameFormat configure(const vpipe::FrameFormat& in) override { return in; }
  void process(const vpipe::Frame& in, vpipe::Frame& out) override {
    if (seen_++ == frame_) throw std::runtime_error("test_fail_at: the filter failed here");
    for (int k = 0; k < in.num_planes; ++k) {
      const auto &from = in.planes[static_cast<std::size_t>(k)],
                 &to = out.planes[static_cast<std::size_t>(k)];
      for (int y = 0; y < from.height; ++y) std::memcpy(to.row(y), from.row(y), from.row_bytes());
    }
  }

 private:
  int frame_;
  int seen_ = 0;
};
VPIPE_REGISTER_FILTER(FailAt);

}  // namespace

// A filter after the fork that throws fails its output alone: the others are
// finished with every frame, the failed one is reported and leaves no file,
// and under --hls its playlist and segments go and the master lists the rest.
// It throws at frame 70 of 100, when the rendition has finished segments and
// is writing one (a DASH muxer's NAME.tmp): those go too. (At frame 20, the
// encoder's delay made whether any packet reached the muxer a race.)
TEST_F(Outputs, AFilterThatThrowsInOneOutputFailsThatOutputAlone) {
  const auto in = input();
  for (const std::string ladder : {"", "hls", "dash"}) {
#if VPIPE_UNDER_ASAN
    // libavformat 59's hls muxer frees the dynamic buffer of a variant's inner
    // MPEG-TS context in its trailer only, not in its deinit: a rendition that
    // fails (no trailer) leaves 1,344 bytes, which LeakSanitizer cannot tell
    // from vpipe's (libavutil has no frame pointers: the stack ends at
    // av_malloc). The plain pass checks the HLS case; ASan checks the others.
    // (Writing a failed rendition's trailer to free it was tried: libavformat
    // 59's dash muxer then divides by zero in its trailer, SIGFPE.)
    if (ladder == "hls") continue;
#endif
    const bool hls = !ladder.empty();
    const auto hls_dir = fs::absolute(Outputs::dir() / (ladder + "-fail"));
    vpipe::TranscodeOptions o;
    o.input = in;
    o.output = path("keep1.mp4");
    o.filters = "resize=320x180";
    o.outputs = {path("broken.mp4") + ":vf=test_fail_at=frame=70",
                 path("keep2.mkv") + ":encoder=mpeg4"};
    if (hls) {
      o.output = "keep1";
      o.outputs = {"broken:vf=test_fail_at=frame=70", "keep2:encoder=mpeg4"};
      (ladder == "hls" ? o.hls : o.dash) = hls_dir.string();
      o.segment_s = 1;
    }
    try {
      (void)vpipe::transcode(o);
      FAIL() << "one output failed: the run must say so";
    } catch (const vpipe::transcode_failed& e) {
      EXPECT_NE(std::string(e.what()).find("test_fail_at: the filter failed here"),
                std::string::npos)
          << e.what();
      ASSERT_EQ(e.report.outputs.size(), 3u);
      EXPECT_TRUE(e.report.outputs[0].failure.empty()) << e.report.outputs[0].failure;
      EXPECT_FALSE(e.report.outputs[1].failure.empty());
      EXPECT_TRUE(e.report.outputs[2].failure.empty()) << e.report.outputs[2].failure;
      EXPECT_EQ(e.report.outputs[0].frames, 100) << hls;
      EXPECT_EQ(e.report.outputs[2].frames, 100) << hls;
    }
    if (!hls) {
      EXPECT_FALSE(fs::exists(path("broken.mp4"))) << "a failed output leaves no partial file";
      EXPECT_EQ(summarize(path("keep1.mp4")).video_packets, 100);
      EXPECT_EQ(summarize(path("keep2.mkv")).video_packets, 100);
      continue;
    }
    EXPECT_FALSE(fs::exists(hls_dir / "broken")) << "the failed rendition's playlist and segments";
    const bool dash = ladder == "dash";
    std::ifstream m(hls_dir / (dash ? "manifest.mpd" : "master.m3u8"));
    const std::string master((std::istreambuf_iterator<char>(m)), std::istreambuf_iterator<char>());
    EXPECT_EQ(master.find("broken/"), std::string::npos) << master;
    for (const char* kept : {"keep1/", "keep2/"})
      EXPECT_NE(master.find(kept), std::string::npos) << master;
    int frames = 0;
    for (const auto& seg :
         dash ? dash_segments_of(hls_dir / "keep2") : segments_of(hls_dir / "keep2" / "index.m3u8"))
      frames += summarize(seg).video_packets;
    EXPECT_EQ(frames, 100) << ladder;
  }
}

// A segment that cannot be written (a full disk: here a file-size limit) fails
// its rendition, named with the file and why, though the HLS and DASH muxers
// close their segment files without a word: the run exits 1 and the failed
// rendition leaves nothing. With another rendition that fits, that one is
// finished whole and the master lists it alone; alone, nothing is left.
TEST_F(Outputs, ASegmentThatCannotBeWrittenFailsItsRendition) {
  const auto in = input();
  for (const std::string ladder : {"hls", "dash"}) {
    std::string limit = "ulimit -f 100; ";  // 50 kB a file
#if VPIPE_UNDER_ASAN
    // libavformat 59's hls muxer leaks a failed variant's inner buffer (see
    // AFilterThatThrowsInOneOutputFailsThatOutputAlone): not vpipe's, unattributable.
    if (ladder == "hls") limit += "export ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\"; ";
#endif
    limit = "sh -c '" + limit + "exec \"$0\" \"$@\"'";
    const auto dir = fs::absolute(Outputs::dir() / (ladder + "-full"));
    auto r = run_vpipe("transcode " + in + " big:crf=0 --output small:vf=resize=160x90 --" +
                           ladder + " " + dir.string() + " --segment 1",
                       limit);
    EXPECT_EQ(r.exit_code, 1) << ladder << ": " << r.err;
    EXPECT_NE(r.err.find("big/"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "big")) << ladder << ": the failed rendition's files";
    std::ifstream m(dir / (ladder == "dash" ? "manifest.mpd" : "master.m3u8"));
    const std::string master((std::istreambuf_iterator<char>(m)), {});
    EXPECT_EQ(master.find("big/"), std::string::npos) << master;
    EXPECT_NE(master.find("small/"), std::string::npos) << master;
    int frames = 0;
    for (const auto& seg : ladder == "dash" ? dash_segments_of(dir / "small")
                                            : segments_of(dir / "small" / "index.m3u8"))
      frames += summarize(seg).video_packets;
    EXPECT_EQ(frames, 100) << ladder << ": the rendition that fits, whole";

    const auto alone = fs::absolute(Outputs::dir() / (ladder + "-full-alone"));
    r = run_vpipe(
        "transcode " + in + " big --crf 0 --" + ladder + " " + alone.string() + " --segment 1",
        limit);
    EXPECT_EQ(r.exit_code, 1) << ladder << ": " << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(alone / "big")) << ladder << ": a failed run's rendition";
  }
}
