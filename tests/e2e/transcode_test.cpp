// End to end on the CPU: the vpipe binary transcodes the bundled sample, and
// the output is checked the way a player would see it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <opencv2/imgproc.hpp>

#include <nlohmann/json.hpp>

extern "C" {
#include <libavutil/pixdesc.h>
}
#include <thread>
#include <vector>

#include "media_check.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

using namespace vpipe;
using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

class TranscodeE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vpipe_e2e_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static const std::vector<Frame>& input_frames() {
    static const std::vector<Frame> frames = [] {
      std::vector<Frame> v;
      for_each_frame(kSample, [&](const Frame& f) { v.push_back(f); });
      return v;
    }();
    return frames;
  }
  static const StreamSummary& input_summary() {
    static const StreamSummary s = summarize(kSample);
    return s;
  }

  fs::path dir_;
};

// `vpipe transcode` of the sample into `out` (lossless, so it is large)
// under a file-size limit of `kb` kilobytes.
CommandResult run_vpipe_limited(const std::string& out, int kb, const std::string& extra = "") {
  const std::string cmd = "sh -c 'ulimit -f " + std::to_string(kb) + "; exec " + kBin +
                          " transcode " + kSample + " " + out + " --encoder ffv1 " + extra +
                          "' 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) r.err += buf;
  const int status = p ? pclose(p) : -1;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

// The session plans once and keeps the plan whole (issue #41): after wiring, its
// chain still lists every step with its formats (the stages own the filters).
TEST_F(TranscodeE2E, TheSessionsPlanKeepsItsChainAfterWiring) {
  TranscodeOptions o;
  o.input = kSample;
  o.output = path("plan.mkv");
  o.device = Device::kCpu;
  o.encoder = "ffv1";
  o.filters = "resize=320x180,blur=sigma=1.5";
  o.max_frames = 5;
  TranscodeSession session(o);
  const auto& chain = session.plan().chain;
  ASSERT_GE(chain.size(), 2u);
  EXPECT_EQ(chain[0].label.rfind("resize", 0), 0u) << chain[0].label;
  EXPECT_EQ(chain[0].out.width, 320);
  EXPECT_EQ(chain[1].label.rfind("blur", 0), 0u) << chain[1].label;
  EXPECT_EQ(session.plan().specs.size(), 2u);
  EXPECT_EQ(session.run().video_packets_written, 5);
  EXPECT_EQ(session.plan().chain.size(), chain.size()) << "running takes nothing from it";
}

TEST_F(TranscodeE2E, RealtimePacesTheInputAtItsNativeRate) {
  const auto out = path("paced.mp4"), report = path("paced.json");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r =
      run_vpipe("transcode " + kSample + " " + out + " --realtime --frames 45 --report " + report);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(s, 1.4) << "45 frames at 30 fps take ~1.5 s of wall time";
  EXPECT_LT(s, 10.0);
  EXPECT_EQ(summarize(out).video_packets, 45);
}

TEST_F(TranscodeE2E, SampleHasWhatTheTestsAssume) {
  const auto& in = input_summary();
  EXPECT_EQ(in.video_packets, 150);
  EXPECT_GT(in.audio_packets, 100);
  EXPECT_EQ(in.width, 1280);
  EXPECT_EQ(in.height, 720);
  EXPECT_EQ(input_frames().size(), 150u);
}

TEST_F(TranscodeE2E, KeepsFramesTimingAndAudioAndQuality) {
  const auto out = path("out.mp4"), report = path("report.json");
  const auto r = run_vpipe("transcode " + kSample + " " + out +
                           " --vf invert,invert --crf 18 --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("device auto: "), std::string::npos) << "says which path ran: " << r.err;
  EXPECT_EQ(r.err.find("CUDA path") != std::string::npos, cuda_unavailable_reason().empty())
      << r.err;

  const auto& in = input_summary();
  const auto s = summarize(out);
  EXPECT_EQ(s.video_codec, "h264");
  EXPECT_EQ(s.video_packets, in.video_packets);
  EXPECT_EQ(s.audio_streams, 1);
  EXPECT_EQ(s.audio_packets, in.audio_packets) << "audio is copied packet for packet";
  EXPECT_EQ(s.width, in.width);
  EXPECT_EQ(s.height, in.height);
  EXPECT_NEAR(s.video_duration_s, in.video_duration_s, in.frame_duration_s);

  double worst = INFINITY;
  int i = 0;
  const int n = for_each_frame(out, [&](const Frame& f) {
    worst = std::min(worst, frame_psnr(f, input_frames().at(static_cast<std::size_t>(i++))));
  });
  EXPECT_EQ(n, 150);
  EXPECT_GE(worst, 35.0) << "lowest per-frame PSNR against the input";

  std::ifstream rf(report);
  const auto j = nlohmann::json::parse(rf);
  EXPECT_EQ(j["frames"]["decoded"], 150);
  EXPECT_EQ(j["frames"]["video_packets_written"], 150);
  EXPECT_EQ(j["frames"]["other_packets_written"], in.audio_packets);
  EXPECT_EQ(j["effective_chain"].size(), 2u);
  EXPECT_GT(j["fps"].get<double>(), 0.0);
  EXPECT_GT(j["steady_fps"].get<double>(), 0.0) << "150 frames: 120 after the warm-up";
  EXPECT_GT(j["latency_ms"]["p99"].get<double>(), 0.0);
  EXPECT_GE(j["latency_ms"]["p99"].get<double>(), j["latency_ms"]["p50"].get<double>());
  ASSERT_GE(j["stages"].size(), 6u);  // demux, decode, 2 filters, encode, mux
  for (const auto& st : j["stages"]) {
    EXPECT_GT(st["busy_s"].get<double>(), 0.0) << st["name"];
    EXPECT_GE(st["latency_ms"]["p99"].get<double>(), st["latency_ms"]["p50"].get<double>())
        << st["name"];
    EXPECT_GE(st["latency_ms"]["max"].get<double>(), st["latency_ms"]["p99"].get<double>())
        << st["name"];
  }
  // The decode stage's calls, timed after the warm-up (PhaseClock): parts of its busy time.
  const auto& decode = j["stages"][1];
  ASSERT_EQ(decode["name"], "decode");
  ASSERT_TRUE(decode.contains("phases_ms_per_item")) << decode;
  EXPECT_EQ(decode["phase_items"], 150 - 30) << "the first 30 frames are left out";
  double phase_ms = 0;
  for (const char* name : {"send", "receive", "copy"}) {
    ASSERT_TRUE(decode["phases_ms_per_item"].contains(name)) << name;
    EXPECT_GE(decode["phases_ms_per_item"][name].get<double>(), 0.0) << name;
    phase_ms += decode["phases_ms_per_item"][name].get<double>() * 120;
  }
  EXPECT_GT(decode["phases_ms_per_item"]["send"].get<double>(), 0.0) << "the CPU decoder's work";
  EXPECT_LE(phase_ms, decode["busy_s"].get<double>() * 1e3) << "phases are inside the busy time";
}

TEST_F(TranscodeE2E, ResizeAndBlurMatchTheReference) {
  const auto out = path("small.mp4");
  const auto r = run_vpipe("transcode " + kSample + " " + out +
                           " --vf \"resize=640x360,blur=sigma=1.5\" --crf 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = summarize(out);
  EXPECT_EQ(s.width, 640);
  EXPECT_EQ(s.height, 360);
  EXPECT_EQ(s.video_packets, 150);
  EXPECT_EQ(s.audio_packets, input_summary().audio_packets);

  // Expected frames, computed with OpenCV's own functions (not the ref::
  // functions the filters call): area resize, then a Gaussian of radius
  // ceil(3 sigma), reflect-101 borders; chroma sigma halved with the plane.
  double worst_blurred = INFINITY, sum_blurred = 0, sum_sharp = 0;
  int i = 0;
  for_each_frame(out, [&](const Frame& got) {
    const Frame& src = input_frames().at(static_cast<std::size_t>(i++));
    Frame small = Frame::allocate_host({AV_PIX_FMT_YUV420P, 640, 360});
    Frame blurred = Frame::allocate_host({AV_PIX_FMT_YUV420P, 640, 360});
    for (int p = 0; p < 3; ++p) {
      const auto k = static_cast<std::size_t>(p);
      auto mat = [](const PlaneView& v) {
        return cv::Mat(v.height, v.width, CV_8UC(v.channels), v.data, v.pitch);
      };
      cv::Mat sized = mat(small.planes[k]), want = mat(blurred.planes[k]);
      cv::resize(mat(src.planes[k]), sized, sized.size(), 0, 0, cv::INTER_AREA);
      const double sigma = p ? 0.75 : 1.5;
      const int side = 2 * static_cast<int>(std::ceil(3 * sigma)) + 1;
      cv::GaussianBlur(sized, want, cv::Size(side, side), sigma, sigma, cv::BORDER_REFLECT_101);
    }
    const double pb = frame_psnr(got, blurred);
    worst_blurred = std::min(worst_blurred, pb);
    sum_blurred += pb;
    sum_sharp += frame_psnr(got, small);
  });
  ASSERT_EQ(i, 150);
  EXPECT_GE(worst_blurred, 35.0);
  EXPECT_GT(sum_blurred / i, sum_sharp / i + 3.0) << "the blur was applied";
}

// What FFmpeg reads back of a file's video stream: its parameters, and per packet
// whether it is a keyframe (the oracle of the encoder-control tests).
struct VideoStreamRead {
  int profile = 0, level = 0;
  std::string pix_fmt;
  std::int64_t bytes = 0;
  double seconds = 0;
  std::vector<bool> key;  // per packet, in file order
};
VideoStreamRead read_video_stream(const std::string& path) {
  auto ctx = open_input(path);
  const int v = av_find_best_stream(ctx.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  EXPECT_GE(v, 0) << path;
  VideoStreamRead r;
  if (v < 0) return r;
  const AVCodecParameters* par = ctx->streams[v]->codecpar;
  r.profile = par->profile;
  r.level = par->level;
  const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(par->format));
  r.pix_fmt = name ? name : "";
  const AVRational rate = av_guess_frame_rate(ctx.get(), ctx->streams[v], nullptr);
  auto pkt = make_av_packet();
  while (av_read_frame(ctx.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == v) {
      r.bytes += pkt->size;
      r.key.push_back((pkt->flags & AV_PKT_FLAG_KEY) != 0);
    }
    av_packet_unref(pkt.get());
  }
  r.seconds = static_cast<double>(r.key.size()) * av_q2d(av_inv_q(rate));
  return r;
}

// Encoder control (issue #43, item 2): rate control, profile, level, the pixel
// format and any private option reach the encoder, FFmpeg reading the result back;
// an option the encoder does not know, or a format it does not take, fails before
// the first frame, naming both, and leaves no file.
TEST_F(TranscodeE2E, EncoderControlReachesTheEncoderAndMistakesFailFirst) {
  const auto base = "transcode " + kSample + " ";
  const auto rated = path("rated.mp4");
  auto r = run_vpipe(base + rated +
                     " --frames 90 --bitrate 300k --maxrate 400k --bufsize 800k --profile baseline "
                     "--level 3.1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = read_video_stream(rated);
  EXPECT_EQ(a.profile, FF_PROFILE_H264_CONSTRAINED_BASELINE);
  EXPECT_EQ(a.level, 31);
  const double kbps = static_cast<double>(a.bytes) * 8 / a.seconds / 1000;
  EXPECT_GT(kbps, 150);
  EXPECT_LT(kbps, 450) << "the rate control held it near 300k (crf 23 gives far more here)";
  const auto deep = path("deep.mp4");
  r = run_vpipe(base + deep + " --frames 10 --pix-fmt yuv420p10le");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_video_stream(deep).pix_fmt, "yuv420p10le");
  EXPECT_EQ(read_video_stream(deep).profile, FF_PROFILE_H264_HIGH_10);
  const auto keyed = path("keyed.mp4");
  r = run_vpipe(base + keyed +
                " --frames 30 --encoder-option x264-params=keyint=10:min-keyint=10:scenecut=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto k = read_video_stream(keyed);
  ASSERT_EQ(k.key.size(), 30u);
  for (std::size_t i = 0; i < k.key.size(); ++i) EXPECT_EQ(k.key[i], i % 10 == 0) << i;
  const auto none = path("none.mp4");
  r = run_vpipe(base + none + " --frames 10 --encoder-option no_such_knob=1");
  EXPECT_EQ(r.exit_code, 2);  // a usage error, caught before the work (issue #77)
  EXPECT_NE(r.err.find("encoder libx264 has no option 'no_such_knob'"), std::string::npos) << r.err;
  r = run_vpipe(base + none + " --frames 10 --encoder mpeg4 --pix-fmt yuv444p");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("encoder mpeg4 does not take pix_fmt yuv444p (it takes yuv420p)"),
            std::string::npos)
      << r.err;
  r = run_vpipe(base + none + " --frames 10 --pix-fmt yuv999p");
  EXPECT_EQ(r.exit_code, 2) << "a name FFmpeg does not know is a usage error";
  EXPECT_FALSE(fs::exists(none)) << "no output is left by a refused option";
}

TEST_F(TranscodeE2E, Ffv1IsLosslessAndFrameExact) {
  const auto out = path("lossless.mkv");
  const auto r = run_vpipe("transcode " + kSample + " " + out + " --encoder ffv1 --frames 20");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int i = 0;
  for_each_frame(out, [&](const Frame& got) {
    EXPECT_TRUE(std::isinf(frame_psnr(got, input_frames().at(static_cast<std::size_t>(i)))))
        << "frame " << i << " differs";
    ++i;
  });
  EXPECT_EQ(i, 20);
  EXPECT_EQ(summarize(out).video_codec, "ffv1");
}

TEST_F(TranscodeE2E, Mpeg4EncoderAndFrameLimit) {
  const auto out = path("part2.mp4");
  const auto r = run_vpipe("transcode " + kSample + " " + out +
                           " --encoder mpeg4 --qscale 4 --frames 30 --vf flip");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = summarize(out);
  EXPECT_EQ(s.video_codec, "mpeg4");
  EXPECT_EQ(s.video_packets, 30);
  EXPECT_GE(s.audio_packets, 1);
}

TEST_F(TranscodeE2E, FrameLimitCutsTheAudioWithTheVideoWhateverTheTiming) {
  // The demuxer reads ahead by a timing-dependent amount; the copied audio
  // must still end with the 30th frame, the same however deep the queues.
  std::vector<int> audio;
  for (int depth : {1, 4, 32}) {
    const auto out = path("cut" + std::to_string(depth) + ".mkv");
    const auto r = run_vpipe("transcode " + kSample + " " + out +
                             " --encoder ffv1 --frames 30 --queue-depth " + std::to_string(depth));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    audio.push_back(summarize(out).audio_packets);
  }
  EXPECT_EQ(audio[0], audio[1]);
  EXPECT_EQ(audio[0], audio[2]);
  // 1 s of video: 48 kHz AAC packets of 1024 samples, ~47 of them.
  EXPECT_NEAR(audio[0], 47, 2);
}

// Starts a transcode of the sample with `args` (by default --realtime: the
// 5 s sample takes 5 s on any machine), sends `sig` 1.5 s in, and checks the
// exit status and that the file is playable and cut short. Returns its
// video packets.
int interrupt_and_check(const std::string& out, int sig, int expected_status,
                        std::vector<std::string> args = {"--realtime", "--vf", "blur=sigma=2"},
                        int total_frames = 150) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    std::vector<std::string> all{kBin, "transcode", kSample, out};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(kBin.c_str(), argv.data());
    _exit(127);
  }
  if (pid < 0) {  // never kill(-1, …): that signals every process we may signal
    ADD_FAILURE() << "fork failed";
    return 0;
  }
  // The signal once the run has written something (its unfinished file, beside the
  // target, has bytes), not after a fixed time: a loaded machine starts it slower.
  const auto started = std::chrono::steady_clock::now();
  const auto written = [&] {
    const fs::path target(out);
    for (const auto& e : fs::directory_iterator(target.parent_path()))
      if (e.path().filename().string().rfind(target.stem().string(), 0) == 0 &&
          e.is_regular_file() && e.file_size() > 4096)
        return true;
    return false;
  };
  while (!written() && std::chrono::steady_clock::now() - started < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(kill(pid, sig), 0);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), expected_status);
  EXPECT_TRUE(fs::exists(out));
  if (!fs::exists(out)) return 0;
  const auto s = summarize(out);
  EXPECT_GT(s.video_packets, 0);
  EXPECT_LT(s.video_packets, total_frames) << "the run should have been cut short";
  EXPECT_EQ(for_each_frame(out, [](const Frame&) {}), s.video_packets) << "every frame decodes";
  return s.video_packets;
}

TEST_F(TranscodeE2E, SigintFinalizesAPlayableFile) {
  interrupt_and_check(path("interrupted.mp4"), SIGINT, 130);
}

// --encode-segments holds segments of frames in its encoders: Ctrl-C still
// writes every frame that was decoded (the segments in flight are finished).
TEST_F(TranscodeE2E, SigintWithEncodeSegmentsWritesEveryDecodedFrame) {
  const auto report = path("segments-interrupted.json");
  const int written =
      interrupt_and_check(path("segments-interrupted.mp4"), SIGINT, 130,
                          {"--device", "cpu", "--loop", "40", "--vf", "resize=320x180", "--gop",
                           "25", "--encode-segments", "3", "--report", report},
                          40 * 150);
  std::ifstream rf(report);
  ASSERT_TRUE(rf);
  const auto j = nlohmann::json::parse(rf);
  EXPECT_EQ(j["status"], "interrupted");
  EXPECT_EQ(j["frames"]["video_packets_written"], j["frames"]["decoded"]) << j["status"];
  EXPECT_EQ(j["frames"]["video_packets_written"], written) << j["status"];
}

TEST_F(TranscodeE2E, SigtermAlsoFinalizesAPlayableFile) {
  interrupt_and_check(path("terminated.mp4"), SIGTERM, 143);
}

// A closed terminal (SIGHUP) finalizes like Ctrl-C (issue #40: it killed transcode with
// exit 129, no message and an unplayable MP4).
TEST_F(TranscodeE2E, SighupAlsoFinalizesAPlayableFile) {
  interrupt_and_check(path("hungup.mp4"), SIGHUP, 129);
}

TEST_F(TranscodeE2E, DiskFullEndsWithAClearErrorAndNoPartialFile) {
  // A 300 KB file-size limit stands in for a full disk: writes fail with EFBIG.
  const auto out = path("full.mkv"), report = path("full.json");
  const auto r = run_vpipe_limited(out, 300, "--report " + report);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("vpipe: error: writing '" + out + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "the partial file is removed (unless --keep-partial)";
  // The report says what was done before it failed.
  std::ifstream rf(report);
  ASSERT_TRUE(rf) << "a failed run still writes its report";
  const auto j = nlohmann::json::parse(rf);
  EXPECT_EQ(j["status"].get<std::string>().rfind("failed: writing", 0), 0u) << j["status"];
  EXPECT_GT(j["frames"]["decoded"].get<int>(), 0);
}

TEST_F(TranscodeE2E, LoopReadsTheInputAgainWithContinuingTimestamps) {
  const auto out = path("loop.mp4");
  const auto r =
      run_vpipe("transcode " + kSample + " " + out + " --device cpu --loop 3 --vf resize=320x180");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto& in = input_summary();
  const auto s = summarize(out);
  EXPECT_EQ(s.video_packets, 3 * in.video_packets);
  EXPECT_EQ(s.audio_packets, 3 * in.audio_packets);
  EXPECT_NEAR(s.video_duration_s, 3 * in.video_duration_s, 2 * in.frame_duration_s);
  std::int64_t last = INT64_MIN;
  int frames = 0;
  for_each_frame(out, [&](const Frame& f) {
    EXPECT_GT(f.pts, last) << "frame " << frames << ": presentation times keep increasing";
    last = f.pts;
    ++frames;
  });
  EXPECT_EQ(frames, 3 * in.video_packets);
}

TEST_F(TranscodeE2E, NullOutputWritesNothingAndCountsFrames) {
  const auto report = path("null.json");
  const auto r = run_vpipe("transcode " + kSample +
                           " null --device cpu --vf resize=320x180 --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists("null"));
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["frames"]["decoded"], input_summary().video_packets);
  EXPECT_EQ(j["frames"]["video_packets_written"], input_summary().video_packets)
      << "frames reaching the end";
  EXPECT_EQ(j["frames"]["encoded"], 0);
  EXPECT_EQ(j["encoder"], "none (null output)");
  EXPECT_GT(j["fps"].get<double>(), 0);
}

TEST_F(TranscodeE2E, ResolutionChangeMidStreamReconfiguresTheChain) {
  const auto in = path("switch.ts");
  write_size_change_clip(in, {{320, 240}, {352, 288}, {320, 240}}, 10);
  ASSERT_EQ(frame_sizes(in).size(), 30u);
  ASSERT_EQ(frame_sizes(in)[15], (std::pair{352, 288})) << "the clip must change size";
  // With a resize in the chain, every frame comes out at its size.
  const auto out = path("switch.mkv"), report = path("switch.json");
  auto r = run_vpipe("transcode " + in + " " + out +
                     " --device cpu --encoder ffv1 --vf "
                     "\"resize=160x120,blur=1\" --report " +
                     report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto sizes = frame_sizes(out);
  ASSERT_EQ(sizes.size(), 30u);
  for (const auto& s : sizes) EXPECT_EQ(s, (std::pair{160, 120}));
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["frames"]["fitted_to_encoder"], 0);
  EXPECT_EQ(j["frames"]["decode_errors"], 0);
  // Without one, the encoder keeps its first size and the grown frames are scaled to it.
  const auto out2 = path("switch2.mkv"), report2 = path("switch2.json");
  r = run_vpipe("transcode " + in + " " + out2 +
                " --device cpu --encoder ffv1 --vf blur=1 --report " + report2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto sizes2 = frame_sizes(out2);
  ASSERT_EQ(sizes2.size(), 30u);
  for (const auto& s : sizes2) EXPECT_EQ(s, (std::pair{320, 240}));
  std::ifstream f2(report2);
  EXPECT_EQ(nlohmann::json::parse(f2)["frames"]["fitted_to_encoder"], 10);
  EXPECT_NE(r.err.find("scaling them to the encoder"), std::string::npos) << r.err;
}

TEST_F(TranscodeE2E, DropPolicyKeepsUpWithALiveRateAndCountsWhatItLost) {
  // The sample paced at 30 fps into a filter that takes 60 ms a frame: with
  // --drop drop-oldest the pipeline keeps the source's pace and loses frames,
  // counted; nothing queues without bound.
  const auto out = path("drop.mkv"), report = path("drop.json");
  const auto r =
      run_vpipe("transcode " + kSample + " " + out +
                " --device cpu --realtime --queue-depth 2 "
                "--drop drop-oldest --encoder ffv1 --vf \"resize=320x180,delay=ms=60\" --report " +
                report);
  ASSERT_EQ(r.exit_code, 0) << "drops are the policy, not errors: " << r.err;
  std::ifstream rf(report);
  const auto j = nlohmann::json::parse(rf);
  const int decoded = j["frames"]["decoded"], written = j["frames"]["video_packets_written"],
            dropped = j["frames"]["dropped"];
  EXPECT_EQ(decoded, 150);
  EXPECT_GT(dropped, 20) << "a 60 ms stage cannot take 30 fps";
  EXPECT_EQ(written + dropped, decoded) << "every frame is written or counted as dropped";
  EXPECT_LT(j["wall_s"].get<double>(), 7.5)
      << "it kept the source's pace (5 s), not the filter's (9 s)";
  for (const auto& q : j["queues"]) EXPECT_LE(q["high_water"], q["capacity"]) << q["name"];
  EXPECT_EQ(for_each_frame(out, [](const Frame&) {}), written) << "the output is playable";
}
