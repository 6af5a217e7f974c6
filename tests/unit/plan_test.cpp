// plan(): every decision a transcode makes before frames flow, tested with a
// probed input and a machine described by hand: no FFmpeg I/O, no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"
#include "vpipe/pipeline/parallel/segment_decode.hpp"
#include "vpipe/pipeline/session/codec_open.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

using namespace vpipe;

namespace {

const FrameFormat k720p{AV_PIX_FMT_YUV420P, 1280, 720};

TranscodeOptions options(std::string filters, std::string output = "out.mp4") {
  TranscodeOptions o;
  o.input = "in.mp4";
  o.output = std::move(output);
  o.filters = std::move(filters);
  o.encoder = "libx264";
  return o;
}

// A machine with a usable GPU (no NVENC) that counts the NVENC probes.
struct Gpu {
  int nvenc_probes = 0;
  MachineProbe probe() {
    MachineProbe m;
    m.nvenc = [this] {
      ++nvenc_probes;
      return std::pair<bool, std::string>{false, "no NVENC here"};
    };
    return m;
  }
};

MachineProbe no_gpu() {
  MachineProbe m;
  m.cuda_unavailable = "no usable CUDA device (test)";
  return m;
}

bool has_note(const TranscodePlan& p, std::string_view text) {
  return std::any_of(p.notes.begin(), p.notes.end(),
                     [&](const auto& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST(Plan, CpuPathRunsEveryFilterOnTheCpu) {
  auto o = options("resize=640x360,blur=sigma=1.5");
  o.device = Device::kCpu;
  Gpu gpu;
  const auto p = plan(o, {k720p, ""}, gpu.probe());
  EXPECT_EQ(p.device, Device::kCpu);
  EXPECT_FALSE(p.nvdec);
  EXPECT_FALSE(p.cuda.has_value());
  EXPECT_FALSE(p.device_memory);
  EXPECT_EQ(p.decoded, k720p);
  EXPECT_EQ(p.output, (FrameFormat{AV_PIX_FMT_YUV420P, 640, 360}));
  ASSERT_NE(p.encoder, nullptr);
  EXPECT_STREQ(p.encoder->name, "libx264");
  EXPECT_EQ(p.labels(), (std::vector<std::string>{"resize=640x360", "blur=sigma=1.5"}));
  EXPECT_EQ(gpu.nvenc_probes, 0);
}

TEST(Plan, AutoOnAGpuDecodesWithNvdecIntoTheCudaSegment) {
  auto o = options("resize=640x360,blur=sigma=1.5");
  Gpu gpu;
  const auto p = plan(o, {k720p, ""}, gpu.probe());
  EXPECT_EQ(p.device, Device::kCuda);
  EXPECT_TRUE(p.nvdec);
  EXPECT_EQ(p.decoded, (FrameFormat{AV_PIX_FMT_NV12, 1280, 720}));
  ASSERT_TRUE(p.cuda.has_value());
  EXPECT_EQ(p.cuda->first, 0u);
  EXPECT_GE(p.cuda->last, 1u);
  EXPECT_TRUE(p.device_memory);
  EXPECT_FALSE(p.decode_into_pinned) << "NVDEC's frames are on the device already";
  EXPECT_EQ(p.output.pix_fmt, AV_PIX_FMT_NV12) << "libx264 takes NV12 as it is: no conversion";
  EXPECT_EQ(p.chain.size(), 2u);
  EXPECT_TRUE(has_note(p, "device auto: CUDA path"));
}

TEST(Plan, NvdecRefusedForTheInputFallsBackOnAutoAndFailsWhenAskedFor) {
  auto o = options("resize=640x360");
  o.pix_fmt = "yuv420p";  // 8 bits asked for: the resize may narrow the 10-bit input
  Gpu gpu;
  const ProbedInput ten_bit{{AV_PIX_FMT_YUV420P10LE, 1280, 720}, "10-bit is not taken"};
  const auto p = plan(o, ten_bit, gpu.probe());
  EXPECT_FALSE(p.nvdec);
  EXPECT_TRUE(has_note(p, "decode auto: CPU (10-bit is not taken)"));
  o.decode = Decode::kNvdec;
  try {
    (void)plan(o, ten_bit, gpu.probe());
    FAIL() << "decode nvdec on an input NVDEC refuses must fail";
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find("decode nvdec: in.mp4: 10-bit is not taken"),
              std::string::npos)
        << e.what();
  }
}

TEST(Plan, AChainThatStartsOnTheCpuDecodesOnTheCpu) {
  Gpu gpu;
  const auto p = plan(options("delay=ms=1,resize=640x360"), {k720p, ""}, gpu.probe());
  EXPECT_FALSE(p.nvdec);
  EXPECT_TRUE(has_note(p, "the chain does not start with its CUDA filters"));
  ASSERT_TRUE(p.cuda.has_value());
  EXPECT_EQ(p.cuda->first, 1u) << "the resize after the CPU delay still runs on the GPU";
  EXPECT_FALSE(p.decode_into_pinned) << "the first step is on the CPU";
}

TEST(Plan, CpuDecodeIntoPinnedFramesOnlyWhenTheFirstStepIsOnTheGpuAndStagingIsPinned) {
  auto o = options("resize=640x360");
  o.decode = Decode::kCpu;
  Gpu gpu;
  EXPECT_TRUE(plan(o, {k720p, ""}, gpu.probe()).decode_into_pinned);
  o.host = HostMemory::kPageable;
  EXPECT_FALSE(plan(o, {k720p, ""}, gpu.probe()).decode_into_pinned);
}

TEST(Plan, ACpuFilterBetweenCudaFiltersIsRefusedNamingIt) {
  Gpu gpu;
  try {
    (void)plan(options("resize=640x360,delay=ms=1,blur=sigma=1"), {k720p, ""}, gpu.probe());
    FAIL() << "a CPU step inside the CUDA segment must be refused";
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find("'delay=ms=1' has no CUDA implementation"),
              std::string::npos)
        << e.what();
  }
}

TEST(Plan, DeviceAndDecodeRequestsAMachineCannotMeetFailClearly) {
  auto o = options("resize=640x360");
  o.device = Device::kCuda;
  EXPECT_THROW((void)plan(o, {k720p, ""}, no_gpu()), input_error);
  o.device = Device::kCpu;
  o.decode = Decode::kNvdec;
  EXPECT_THROW((void)plan(o, {k720p, ""}, no_gpu()), input_error);
  o.device = Device::kAuto;
  o.decode = Decode::kAuto;
  const auto p = plan(o, {k720p, ""}, no_gpu());
  EXPECT_EQ(p.device, Device::kCpu);
  EXPECT_TRUE(has_note(p, "device auto: CPU path (no usable CUDA device (test))"));
}

TEST(Plan, EncoderAutoAsksForNvencOnlyOnTheCudaPath) {
  auto o = options("resize=640x360");
  o.encoder = "auto";
  Gpu gpu;
  auto p = plan(o, {k720p, ""}, gpu.probe());
  EXPECT_EQ(gpu.nvenc_probes, 1);
  EXPECT_STREQ(p.encoder->name, "libx264");
  EXPECT_TRUE(
      has_note(p, "encoder auto: libx264, this device has no usable NVENC (no NVENC here)"));
  o.device = Device::kCpu;
  p = plan(o, {k720p, ""}, gpu.probe());
  EXPECT_EQ(gpu.nvenc_probes, 1) << "no probe (and no 0.5 s) on the CPU path";
  o.output = "null";
  o.device = Device::kAuto;
  p = plan(o, {k720p, ""}, gpu.probe());
  EXPECT_EQ(p.encoder, nullptr);
  EXPECT_EQ(gpu.nvenc_probes, 1) << "a null output has no encoder to choose";
}

TEST(Plan, ADecodeOnlyNullRunKeepsNvdecFramesOnTheDevice) {
  Gpu gpu;
  const auto p = plan(options("", "null"), {k720p, ""}, gpu.probe());
  EXPECT_TRUE(p.null_output);
  EXPECT_TRUE(p.nvdec);
  EXPECT_TRUE(p.chain.empty());
  EXPECT_FALSE(p.cuda.has_value());
  EXPECT_TRUE(p.device_memory) << "NVDEC's frames come from the strategy";
}

// Measured on the H200 (docs/results/decode-threads-*): NVDEC with one FFmpeg thread decodes
// HEVC 1080p 7-8 % below NVCUVID; two frame threads reach it. A live input keeps one (no frame
// of latency); the user's count is kept; the CPU decoder keeps FFmpeg's automatic count.
TEST(Plan, NvdecDecodesAFileWithTwoFrameThreadsAndALiveInputWithOne) {
  TranscodeOptions o;
  o.input = "clip.mp4";
  EXPECT_EQ(decoder_threads(o, true), kNvdecFrameThreads);
  EXPECT_EQ(kNvdecFrameThreads, 2);
  EXPECT_EQ(decoder_threads(o, false), 0);
  o.input = "udp://239.0.0.1:5000";
  EXPECT_EQ(decoder_threads(o, true), 1);
  o.input = "clip.mp4";
  o.decode_threads = 1;
  EXPECT_EQ(decoder_threads(o, true), 1);
  o.decode_threads = 4;
  EXPECT_EQ(decoder_threads(o, true), 4);
  EXPECT_EQ(decoder_threads(o, false), 4);
}

TEST(Plan, TheEncodersFormatIsAppendedAsAConversion) {
  auto o = options("resize=640x360");
  o.device = Device::kCpu;
  o.encoder = "ffv1";
  o.output = "out.mkv";  // (ffv1 does not go in .mp4)
  const auto rgb = plan(o, {{AV_PIX_FMT_RGB24, 1280, 720}, ""}, no_gpu());
  EXPECT_EQ(rgb.output.pix_fmt, encoder_format(rgb.encoder, AV_PIX_FMT_RGB24));
  o.encoder = "libx264";
  const auto p = plan(o, {{AV_PIX_FMT_RGB24, 1280, 720}, ""}, no_gpu());
  EXPECT_EQ(p.output.pix_fmt, AV_PIX_FMT_YUV420P);
  EXPECT_GT(p.chain.size(), 1u) << "a conversion to yuv420p follows the resize";
}

TEST(Plan, DropPolicyAndQueueSizesFollowOneRule) {
  auto o = options("");
  o.device = Device::kCpu;
  o.queue_depth = 5;
  auto p = plan(o, {k720p, ""}, no_gpu());
  EXPECT_EQ(p.drop, DropPolicy::kBlock) << "a file loses nothing by default";
  EXPECT_EQ(p.queues.packets, 10u);
  EXPECT_EQ(p.queues.mux, 40u);
  EXPECT_EQ(p.queues.frames, 5u);
  EXPECT_EQ(p.queues.upload_slots, 7u);
  EXPECT_EQ(p.queues.download_slots, 8u);
  o.input = "udp://127.0.0.1:5000";
  p = plan(o, {k720p, ""}, no_gpu());
  EXPECT_TRUE(p.live);
  EXPECT_EQ(p.drop, DropPolicy::kDropNewest) << "live input: latency stays bounded";
  o.drop = Drop::kBlock;
  EXPECT_EQ(plan(o, {k720p, ""}, no_gpu()).drop, DropPolicy::kBlock);
}

// NVDEC's frames are copied out as they come (DecodeStage), so the decoder asks
// one surface more than its DPB whatever the queue depth: on the H200 more
// surfaces slowed 21 sessions (docs/results/decode-surfaces-*), and the queue
// after NVDEC is as deep as the user asks.
TEST(Plan, NvdecSurfacesDoNotGrowWithTheQueueDepth) {
  EXPECT_EQ(kNvdecFramesHeldCopying, 1);
  auto o = options("resize=640x360");
  o.queue_depth = 32;
  Gpu gpu;
  const auto p = plan(o, {k720p, ""}, gpu.probe());
  ASSERT_TRUE(p.nvdec);
  EXPECT_EQ(p.queues.frames, 32u) << "the queue after NVDEC is not capped";
}

TEST(Plan, BadOptionsFailBeforeAnythingIsOpened) {
  auto o = options("resize=640x360");
  o.loop = 0;
  EXPECT_THROW(check_options(o), input_error);
  o.loop = 1;
  o.input_options = {"=x"};
  EXPECT_THROW(check_options(o), input_error);
  o.input_options.clear();
  EXPECT_NO_THROW(check_options(o));
  EXPECT_THROW((void)plan(options("resize=wide"), {k720p, ""}, no_gpu()), chain_error);
}

TEST(Plan, EnumNamesRoundTripAndUnknownNamesFail) {
  EXPECT_EQ(from_name<Device>("cuda", "device"), Device::kCuda);
  EXPECT_EQ(name_of(Drop::kDropOldest), "drop-oldest");
  EXPECT_EQ(from_name<HostMemory>("pageable", "host"), HostMemory::kPageable);
  EXPECT_THROW((void)from_name<Decode>("gpu", "decode"), input_error);
}

TEST(Plan, NvdecIsRefusedForOddHeights) {
  UniqueAVCodecParameters par(avcodec_parameters_alloc());
  par->codec_type = AVMEDIA_TYPE_VIDEO;
  par->codec_id = AV_CODEC_ID_MPEG2VIDEO;
  par->format = AV_PIX_FMT_YUV420P;
  par->width = 720;
  par->height = 404;
  const std::string even = nvdec_unsupported_reason(par.get());
  if (even.find("no NVDEC hwaccel") != std::string::npos) GTEST_SKIP() << even;
  EXPECT_EQ(even, "");
  par->height = 405;
  EXPECT_EQ(
      nvdec_unsupported_reason(par.get()),
      "odd picture height (405 rows): FFmpeg's NVDEC copy misplaces the chroma plane by one row");
}

TEST(Plan, NvdecIsRefusedBelowItsSmallestPicture) {
  // A 2x2 H.264 clip went to NVDEC under --decode auto on the H200 and failed
  // at its first frame; the plan must send it to the CPU decoder instead.
  UniqueAVCodecParameters par(avcodec_parameters_alloc());
  par->codec_type = AVMEDIA_TYPE_VIDEO;
  par->codec_id = AV_CODEC_ID_H264;
  par->format = AV_PIX_FMT_YUV420P;
  par->width = 48;
  par->height = 16;
  const std::string smallest = nvdec_unsupported_reason(par.get());
  if (smallest.find("no NVDEC hwaccel") != std::string::npos) GTEST_SKIP() << smallest;
  EXPECT_EQ(smallest, "");
  par->width = par->height = 2;
  EXPECT_EQ(nvdec_unsupported_reason(par.get()),
            "2x2 is below NVDEC's smallest h264 picture (48x16)");
  par->codec_id = AV_CODEC_ID_HEVC;
  par->width = par->height = 128;
  EXPECT_NE(nvdec_unsupported_reason(par.get()).find("(144x144)"), std::string::npos);
}

TEST(Plan, CpuDecodedFramesBecomeRgbOnTheGpuWithoutAResize) {
  // Issue #26: "blur=sigma=1,format=rgb24,invert,format=yuv420p" after CPU decode was
  // refused on the CUDA path ("'format=rgb24' has no CUDA implementation and
  // sits between CUDA filters"). Now the conversion is resize_rgb at the same
  // size (after an exact interleave to NV12): every step runs on the GPU.
  auto o = options("blur=sigma=1,format=rgb24,invert,format=yuv420p");
  o.decode = Decode::kCpu;
  Gpu gpu;
  const auto p = plan(o, {k720p, ""}, gpu.probe());
  ASSERT_TRUE(p.cuda.has_value());
  for (std::size_t i = p.cuda->first; i <= p.cuda->last; ++i)
    EXPECT_TRUE(p.chain[i].filter->has_cuda()) << p.chain[i].label;
  EXPECT_TRUE(std::any_of(p.chain.begin(), p.chain.end(), [](const auto& c) {
    return c.label.find("resize_rgb at the same size") != std::string::npos;
  }));
}

// ---- the one option schema (the command line, vpipe run's YAML, the Python package) ------

// --nvdec-api cuvid opens FFmpeg's cuvid decoder for the codec (NVIDIA's parser);
// a codec FFmpeg has none for fails naming it, never the hwaccel's decoder instead.
TEST(Plan, NvdecApiCuvidPicksFfmpegsCuvidDecoderForTheCodec) {
  const AVCodec* hevc = cuvid_decoder(AV_CODEC_ID_HEVC);
  if (!hevc) GTEST_SKIP() << "this FFmpeg was built without its cuvid decoders";
  EXPECT_STREQ(hevc->name, "hevc_cuvid");
  ASSERT_NE(cuvid_decoder(AV_CODEC_ID_H264), nullptr);
  EXPECT_STREQ(cuvid_decoder(AV_CODEC_ID_H264)->name, "h264_cuvid");
  ASSERT_NE(cuvid_decoder(AV_CODEC_ID_MPEG2VIDEO), nullptr);
  EXPECT_STREQ(cuvid_decoder(AV_CODEC_ID_MPEG2VIDEO)->name, "mpeg2_cuvid");
  EXPECT_EQ(cuvid_decoder(AV_CODEC_ID_FFV1), nullptr);
  TranscodeOptions o;
  EXPECT_EQ(o.nvdec_api, NvdecApi::kAuto);
  set_option(o, "nvdec_api", "cuvid", "cfg", kConfig);
  EXPECT_EQ(o.nvdec_api, NvdecApi::kCuvid);
  EXPECT_THROW(set_option(o, "nvdec_api", "nvcuvid", "cfg", kConfig), usage_error);
}

// --nvdec-api auto: cuvid only for a run of several streams, each with one decoder, where
// FFmpeg has a cuvid decoder for the codec (faster there, RESULTS); the hwaccel otherwise.
// A named API is kept whatever the run.
TEST(Plan, NvdecApiAutoTakesCuvidForSeveralStreamsWhereFfmpegHasIt) {
  if (!cuvid_decoder(AV_CODEC_ID_HEVC)) GTEST_SKIP() << "this FFmpeg has no cuvid decoders";
  TranscodeOptions o;
  EXPECT_EQ(nvdec_api_for(o, AV_CODEC_ID_HEVC), NvdecApi::kHwaccel) << "one stream";
  o.streams = 21;
  EXPECT_EQ(nvdec_api_for(o, AV_CODEC_ID_HEVC), NvdecApi::kCuvid);
  EXPECT_EQ(nvdec_api_for(o, AV_CODEC_ID_H264), NvdecApi::kCuvid);
  EXPECT_EQ(nvdec_api_for(o, AV_CODEC_ID_FFV1), NvdecApi::kHwaccel) << "no ffv1_cuvid";
  for (const int sessions : {TranscodeOptions::kAutoSessions, 4}) {
    o.decode_sessions = sessions;  // segment decode: the hwaccel it was measured with
    EXPECT_EQ(nvdec_api_for(o, AV_CODEC_ID_HEVC), NvdecApi::kHwaccel) << sessions;
  }
  o.decode_sessions = 1;
  o.nvdec_api = NvdecApi::kHwaccel;
  EXPECT_EQ(nvdec_api_for(o, AV_CODEC_ID_HEVC), NvdecApi::kHwaccel);
  o.streams = 1;
  o.nvdec_api = NvdecApi::kCuvid;
  EXPECT_EQ(nvdec_api_for(o, AV_CODEC_ID_HEVC), NvdecApi::kCuvid);
}

TEST(OptionSchema, KeysAliasesAndValuesAreCheckedInOnePlace) {
  vpipe::TranscodeOptions o;
  const auto set = [&](const char* key, const char* value) {
    vpipe::set_option(o, key, value, "cfg", vpipe::kConfig);
  };
  set("vf", "resize=640x360");
  set("filters", "blur");
  EXPECT_EQ(o.filters, "blur") << "vf is an alias of filters";
  set("device", "cpu");
  EXPECT_EQ(o.device, vpipe::Device::kCpu);
  set("frames", "120");
  ASSERT_TRUE(o.max_frames.has_value());
  EXPECT_EQ(*o.max_frames, 120);
  set("realtime", "true");
  EXPECT_TRUE(o.realtime);
  auto error = [&](const char* key, const char* value, vpipe::FrontEnd end = vpipe::kConfig) {
    try {
      vpipe::set_option(o, key, value, "cfg", end);
    } catch (const vpipe::usage_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("crf", "99"), "cfg: crf 99: outside 0..63");
  EXPECT_EQ(error("crf", "2x"), "cfg: crf 2x: not a number");
  EXPECT_EQ(error("crf", "nan"), "cfg: crf nan: outside 0..63");
  EXPECT_EQ(error("qscale", "1"), "cfg: qscale 1: outside 2..31") << "one range everywhere";
  EXPECT_EQ(error("queue_depth", "257"), "cfg: queue_depth 257: outside 1..256");
  EXPECT_EQ(error("realtime", "maybe"), "cfg: realtime maybe: expected true or false");
  set("decode_sessions", "auto");
  EXPECT_EQ(o.decode_sessions, vpipe::TranscodeOptions::kAutoSessions);
  EXPECT_EQ(error("decode_sessions", "0"), "cfg: decode_sessions 0: outside 1..64");
  set("graphs", "on");
  EXPECT_TRUE(o.graphs);
  set("mem", "slab");
  EXPECT_EQ(o.mem, vpipe::Strategy::kSlab) << "mem is the strategy table's enum";
  EXPECT_NE(error("mem", "managed").find("cfg: mem managed: expected one of naive, pool"),
            std::string::npos);
  set("budget", "1.5G");
  EXPECT_EQ(o.budget, std::size_t{3} << 29) << "sizes take units, parsed in one place";
  set("budget_bytes", "1048576");
  EXPECT_EQ(o.budget, std::size_t{1} << 20);
  set("input_option", "rtsp_transport=tcp");
  set("input_options", "probesize=32");
  EXPECT_EQ(o.input_options, (std::vector<std::string>{"rtsp_transport=tcp", "probesize=32"}));
  EXPECT_NE(error("input_option", "=x").find("=x: expected key=value"), std::string::npos);
  set("bitrate", "1.5M");
  EXPECT_EQ(o.bitrate, 1500000) << "bit rates are decimal, as FFmpeg's -b:v";
  set("maxrate", "800k");
  EXPECT_EQ(o.maxrate, 800000);
  EXPECT_NE(error("bufsize", "2X").find("bufsize 2X: expected bits per second"), std::string::npos);
  set("encoder_option", "x265-params=aq-mode=3");
  EXPECT_EQ(o.encoder_options, (std::vector<std::string>{"x265-params=aq-mode=3"}));
  EXPECT_NE(error("encoder_option", "crf").find("crf: expected key=value"), std::string::npos);
  set("pix_fmt", "yuv420p10le");
  EXPECT_NE(error("pix_fmt", "yuv999p").find("not a pixel format FFmpeg knows"), std::string::npos);
  set("stall_timeout_s", "2.5");
  EXPECT_EQ(o.stall_timeout_s, 2.5);
  EXPECT_NE(error("device", "gpu").find("cfg: device gpu: expected one of auto, cpu, cuda"),
            std::string::npos);
  const auto unknown = error("crff", "20");
  EXPECT_NE(unknown.find("unknown option 'crff'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("crf"), std::string::npos) << "the known keys are listed";
  EXPECT_NE(error("streams", "3").find("a stream of vpipe run is one pipeline"), std::string::npos)
      << "a config's stream is one pipeline";
  vpipe::set_option(o, "streams", "3", "py", vpipe::kPython);
  EXPECT_EQ(o.streams, 3);
}

// Every row is whole: a key, a flag, help, and a default its own setter takes back (so the
// default --help shows is one the option accepts), and no two rows share a name.
TEST(OptionSchema, EveryRowIsWholeAndItsDefaultIsAValueItTakes) {
  std::set<std::string> names;
  for (const auto& s : vpipe::option_schema()) {
    SCOPED_TRACE(s.key);
    EXPECT_FALSE(s.help.empty());
    EXPECT_TRUE(names.insert(s.key).second) << "a key twice";
    if (!s.alias.empty()) {
      EXPECT_TRUE(names.insert(s.alias).second) << "an alias twice";
    }
    EXPECT_EQ(s.flag.rfind("--", 0) == 0, s.form != vpipe::Form::kPositional) << s.flag;
    EXPECT_EQ(vpipe::find_option(s.key), &s);
    const auto d = s.default_text();
    if (d.empty()) continue;  // unset (max_frames, budget, gpus…)
    vpipe::TranscodeOptions o;
    EXPECT_NO_THROW(s.set(o, d)) << d;
    EXPECT_EQ(s.get(o), d);
  }
  EXPECT_GE(names.size(), 36u) << "the options and their aliases";
}

// --decode-sessions auto by decoder, codec, engine load and memory (the
// resolution and the segment length set what a session holds).
TEST(AutoDecodeSessions, PicksByDecoderCodecLoadAndTheMemoryASessionHolds) {
  constexpr std::size_t MiB = 1u << 20;
  vpipe::AutoSessionsInput in;
  in.nvdec = true;
  in.codec = AV_CODEC_ID_H264;
  in.frame_bytes = 1920 * 1080 * 3 / 2;  // ~3 MB: 3 segments of 120 frames ≈ 1.1 GB a session
  in.engine_load_pct = 0;
  in.memory_bytes = 100000 * MiB;
  auto pick = vpipe::auto_decode_sessions(in, 4);
  EXPECT_EQ(pick.sessions, 4);
  EXPECT_EQ(pick.why, "NVDEC engines 0 % busy");
  in.engine_load_pct = 55;
  EXPECT_EQ(vpipe::auto_decode_sessions(in, 4).sessions, 1) << "busy engines: one session";
  in.engine_load_pct.reset();
  EXPECT_EQ(vpipe::auto_decode_sessions(in, 4).why,
            "NVDEC; NVML not loaded, engines taken as idle");
  in.codec = AV_CODEC_ID_VP9;
  pick = vpipe::auto_decode_sessions(in, 4);
  EXPECT_EQ(pick.sessions, 1);
  EXPECT_NE(pick.why.find("vp9: segment decode is tested on"), std::string::npos) << pick.why;
  in.codec = AV_CODEC_ID_HEVC;
  in.frame_bytes = 3840 * 2160 * 3 / 2;  // 4K: ~4.5 GB a session
  in.memory_bytes = 20000 * MiB;         // half: room for two
  pick = vpipe::auto_decode_sessions(in, 4);
  EXPECT_EQ(pick.sessions, 2);
  EXPECT_NE(pick.why.find("2 sessions' segments fit in half of 20000 MB"), std::string::npos)
      << pick.why;
  in.memory_bytes = 2000 * MiB;  // a 2 GB budget: not even one 4K session twice
  EXPECT_EQ(vpipe::auto_decode_sessions(in, 4).sessions, 1);
  in.memory_bytes = 100000 * MiB;
  ASSERT_EQ(vpipe::auto_decode_sessions(in, 4).sessions, 4);
  in.live = true;
  EXPECT_EQ(vpipe::auto_decode_sessions(in, 4).sessions, 1) << "live: latency";
  in.live = false;
  in.nvdec = false;
  EXPECT_EQ(vpipe::auto_decode_sessions(in, 4).why, "the CPU decoder threads one session");
}

namespace vpipe::test {
extern const char* const kBuiltinSourceDir;  // paths.cpp
}

namespace {

// The rates auto's second step measures, from a report's stages: the decoder's
// items over its busy seconds, and the slowest other stage's (the demuxer and
// the stages `left_out` aside).
vpipe::MeasuredRates rates_of(const nlohmann::json& report, const std::set<std::string>& left_out) {
  vpipe::MeasuredRates r;
  for (const auto& st : report.at("stages")) {
    const std::string name = st.at("name");
    const double fps = st.at("items_in").get<double>() / st.at("busy_s").get<double>();
    if (name == "decode") {
      r.decode_fps = fps;
    } else if (name != "demux" && !left_out.count(name) &&
               (r.downstream_fps == 0 || fps < r.downstream_fps)) {
      r.downstream_fps = fps;
      r.slowest = name;
    }
  }
  return r;
}

}  // namespace

// --decode-sessions auto, step 2, on stage rates recorded on the H200: issue
// #45's encoder-bound run (one session, 1080p H.264 → 640x360 → ffv1, whose
// auto took 4 sessions and ran slower with 15x the latency at a5d5cd7).
TEST(AutoDecodeSessions, MeasuredRatesChooseMoreSessionsOnlyWhenDecodeIsTheBound) {
  const char* env = std::getenv("VPIPE_SOURCE_DIR");
  const auto path = std::string(env ? env : vpipe::test::kBuiltinSourceDir) +
                    "/docs/results/decode-encoder-bound-h200-2026-12-03-7068825/1-1.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const auto report = nlohmann::json::parse(in);
  auto r = rates_of(report, {});
  ASSERT_GT(r.decode_fps, 1000) << "one NVDEC session decoded 1,504 packets in 1.23 s";
  ASSERT_EQ(r.slowest, "encode");
  auto pick = vpipe::sessions_from_rates(r, 7);
  EXPECT_EQ(pick.sessions, 1) << pick.why;
  EXPECT_NE(pick.why.find("encode takes 85"), std::string::npos) << pick.why;
  EXPECT_NE(pick.why.find("bound downstream"), std::string::npos) << pick.why;

  // The same stages to a null output: the resize (1,500 frames in 0.28 s) is
  // the slowest, ~4.4x one session's decode: five sessions keep it fed.
  r = rates_of(report, {"encode", "mux"});
  ASSERT_EQ(r.slowest, "cuda:resize=640x360");
  pick = vpipe::sessions_from_rates(r, 7);
  EXPECT_EQ(pick.sessions, static_cast<int>(std::ceil(r.downstream_fps / r.decode_fps)));
  EXPECT_GE(pick.sessions, 4);
  EXPECT_LE(pick.sessions, 5);
  EXPECT_NE(pick.why.find("decode is the bound"), std::string::npos) << pick.why;
  EXPECT_EQ(vpipe::sessions_from_rates(r, 2).sessions, 2) << "the first step's most holds";

  // Latency (kLatencyBound): on the H200 at f4736c4 one session's p50 was 29 ms
  // on a decode-bound 1080p run and auto's 4 sessions' 310 ms: their window
  // held 3 segments of 60 frames. That hold, at this decode rate, is more than
  // one session's latency again: one session.
  r.latency_ms = 29;
  r.hold_frames = vpipe::kSegmentsPerSession * 60;
  pick = vpipe::sessions_from_rates(r, 7);
  EXPECT_EQ(pick.sessions, 1) << pick.why;
  EXPECT_NE(pick.why.find("would hold 180 frames"), std::string::npos) << pick.why;
  EXPECT_NE(pick.why.find("decode_sessions N trades that latency"), std::string::npos) << pick.why;
  // A run whose latency is already long (a deep queue downstream) may widen:
  // the hold is less than one session's p50.
  r.latency_ms = 2 * r.hold_frames / r.decode_fps * 1000;
  EXPECT_GE(vpipe::sessions_from_rates(r, 7).sessions, 4);
  r.latency_ms = 0;  // not measured (nothing written yet): the rates decide
  r.hold_frames = 0;

  // A CPU encoder that keeps up, with every core's thread: a session would take one.
  r.encoder_threads = 16;
  r.cores = 16;
  pick = vpipe::sessions_from_rates(r, 7);
  EXPECT_EQ(pick.sessions, 1);
  EXPECT_NE(pick.why.find("16 threads leave 1 of 16 cores"), std::string::npos) << pick.why;
  r.encoder_threads = 12;
  EXPECT_EQ(vpipe::sessions_from_rates(r, 7).sessions, 4);

  // The headroom: downstream must outrun one session by kSessionHeadroom.
  vpipe::MeasuredRates edge{1000, 1000 * vpipe::kSessionHeadroom * 0.99, "cuda:blur", 0, 16};
  EXPECT_EQ(vpipe::sessions_from_rates(edge, 7).sessions, 1);
  edge.downstream_fps = 1000 * vpipe::kSessionHeadroom * 1.01;
  EXPECT_EQ(vpipe::sessions_from_rates(edge, 7).sessions, 2);
  edge.remaining_frames =
      vpipe::kMinFramesToWiden - 1;  // a short input: starting sessions costs more
  pick = vpipe::sessions_from_rates(edge, 7);
  EXPECT_EQ(pick.sessions, 1);
  EXPECT_NE(pick.why.find("frames left"), std::string::npos) << pick.why;
  edge.remaining_frames = vpipe::kMinFramesToWiden;
  EXPECT_EQ(vpipe::sessions_from_rates(edge, 7).sessions, 2);
  edge.downstream_fps = 0;  // the input ended before anything after the decoder was timed
  EXPECT_EQ(vpipe::sessions_from_rates(edge, 7).sessions, 1);
}

// A 10-bit input keeps 10 bits without a chain; a chain narrows it, and says so.
TEST(Plan, TenBitsNarrowedForTheFiltersIsRefusedUnlessAskedForAndWithoutAChainKept) {
  auto o = options("resize=640x360");
  o.device = Device::kCpu;
  o.encoder = "libx265";
  const FrameFormat ten{AV_PIX_FMT_YUV420P10LE, 1280, 720};
  try {
    (void)plan(o, {ten, ""}, no_gpu());
    FAIL() << "libx265 keeps 10 bits: narrowing them for the filters must be asked for";
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find("Add pix_fmt yuv420p"), std::string::npos) << e.what();
  }
  o.pix_fmt = "yuv420p";
  auto p = plan(o, {ten, ""}, no_gpu());
  EXPECT_TRUE(has_note(p, "10-bit input: resize=640x360 takes 8-bit frames"));
  EXPECT_EQ(p.output.pix_fmt, AV_PIX_FMT_YUV420P);
  o.pix_fmt.clear();
  o.encoder = "mpeg4";  // 8 bits only: narrowed anyway, and said
  EXPECT_TRUE(has_note(plan(o, {ten, ""}, no_gpu()), "10-bit input"));
  EXPECT_TRUE(
      has_note(plan(options("resize=640x360", "null"), {ten, ""}, no_gpu()), "10-bit input"));
  o.encoder = "libx265";
  o.filters.clear();
  p = plan(o, {ten, ""}, no_gpu());
  EXPECT_FALSE(has_note(p, "10-bit input"));
  EXPECT_EQ(p.output.pix_fmt, AV_PIX_FMT_YUV420P10LE);
}

// 12 bits into libx264, which codes 8 or 10: the deepest it codes, and a note (it fell to 8
// bits without a word).
TEST(Plan, AnInputDeeperThanTheEncoderCodesKeepsAllTheBitsItCan) {
  const AVCodec* x264 = avcodec_find_encoder_by_name("libx264");
  ASSERT_NE(x264, nullptr);
  bool ten = false;
  for (const AVPixelFormat* f = x264->pix_fmts; *f != AV_PIX_FMT_NONE; ++f)
    ten |= *f == AV_PIX_FMT_YUV420P10LE;
  if (!ten) GTEST_SKIP() << "this libx264 codes 8 bits only";
  EXPECT_EQ(encoder_format(x264, AV_PIX_FMT_YUV420P12LE), AV_PIX_FMT_YUV420P10LE);
  auto o = options("", "out.mkv");
  o.device = Device::kCpu;
  const auto p = plan(o, {{AV_PIX_FMT_YUV420P12LE, 320, 240}, ""}, no_gpu());
  EXPECT_EQ(p.output.pix_fmt, AV_PIX_FMT_YUV420P10LE);
  EXPECT_TRUE(has_note(p, "12-bit frames: libx264 codes at most 10 bits here, so yuv420p10le"));
  o.encoder = "mpeg4";  // 8 bits only
  EXPECT_TRUE(has_note(plan(o, {{AV_PIX_FMT_YUV420P10LE, 320, 240}, ""}, no_gpu()),
                       "10-bit frames: mpeg4 codes at most 8 bits here, so yuv420p"));
  // GIF's 256 fixed colours: each sample's depth, not the first one's as "at most 2 bits".
  o = options("", "out.gif");
  o.device = Device::kCpu;
  o.encoder = "gif";
  EXPECT_TRUE(has_note(plan(o, {{AV_PIX_FMT_YUV420P, 320, 240}, ""}, no_gpu()),
                       "8-bit frames: gif codes 2-3-3-bit samples here, so rgb8 (256 colours)"));
}

// A palette picture (PNG's, FLIC's, QuickTime Animation's) is RGB colours by index: into
// Y'CbCr as RGB is, never the indices coded as grey (libx264's gray: PSNR 7 dB).
TEST(Plan, APaletteIsRgbColoursNotGreyLevels) {
  const AVCodec* x264 = avcodec_find_encoder_by_name("libx264");
  ASSERT_NE(x264, nullptr);
  EXPECT_EQ(encoder_format(x264, AV_PIX_FMT_PAL8), AV_PIX_FMT_YUV420P);
  EXPECT_TRUE(is_rgb(AV_PIX_FMT_PAL8));
  auto o = options("", "out.mp4");
  o.device = Device::kCpu;
  const auto p = plan(o, {{AV_PIX_FMT_PAL8, 320, 240}, ""}, no_gpu());
  EXPECT_EQ(p.output.pix_fmt, AV_PIX_FMT_YUV420P);
  EXPECT_TRUE(has_note(p, "RGB converted to Y'CbCr as BT.601 limited range"));
}

// MJPEG codes JPEG's full-range yuvj formats, whatever the frames were: RGB (a chain ending
// format=rgb24) went to yuv420p, which the encoder refused to open.
TEST(Plan, MjpegGetsAJpegRangeFormatFromEveryInput) {
  const AVCodec* mjpeg = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
  ASSERT_NE(mjpeg, nullptr);
  for (const AVPixelFormat in :
       {AV_PIX_FMT_RGB24, AV_PIX_FMT_RGBA, AV_PIX_FMT_NV12, AV_PIX_FMT_YUV420P,
        AV_PIX_FMT_YUV420P10LE, AV_PIX_FMT_GRAY8, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ444P})
    EXPECT_TRUE(is_jpeg_range(encoder_format(mjpeg, in)))
        << av_get_pix_fmt_name(in) << " → " << av_get_pix_fmt_name(encoder_format(mjpeg, in));
}

TEST(Plan, NvdecsP010GoesToATenBitEncoderInItsOwnTenBitLayout) {
  const AVCodec* x265 = avcodec_find_encoder_by_name("libx265");
  if (!x265) GTEST_SKIP() << "this FFmpeg has no libx265";
  EXPECT_EQ(encoder_format(x265, AV_PIX_FMT_P010LE), AV_PIX_FMT_YUV420P10LE);
  EXPECT_EQ(encoder_format(x265, AV_PIX_FMT_NV12), AV_PIX_FMT_YUV420P);
  EXPECT_EQ(encoder_format(x265, AV_PIX_FMT_YUV420P10LE), AV_PIX_FMT_YUV420P10LE);
}

TEST(Plan, TheChainConvertsInTheInputsColourAndTagsTheOutputOnlyWhereItChangesIt) {
  auto o = options("format=rgb24,format=yuv420p");
  o.device = Device::kCpu;
  const ColorSpec hd_full{ColorMatrix::kBT709, ColorRange::kFull};
  auto p = plan(o, {k720p, "", hd_full}, no_gpu());
  EXPECT_FALSE(p.recoloured);
  EXPECT_EQ(p.colour, hd_full);
  for (const auto& step : p.chain) EXPECT_EQ(step.colour, hd_full) << step.label;
  o.filters = "format=rgb24,rgb_to_yuv=format=yuv420p:matrix=bt2020";
  p = plan(o, {k720p, "", hd_full}, no_gpu());
  EXPECT_TRUE(p.recoloured);
  EXPECT_EQ(p.colour, (ColorSpec{ColorMatrix::kBT2020, ColorRange::kFull}));
  EXPECT_TRUE(has_note(p, "colour: the chain converts BT.709 full range to BT.2020 full range"));
}

// An RGB input has no Y'CbCr matrix for the output to keep: the chain's (BT.601, as swscale's)
// is named in the tags, or a player reads an untagged HD picture as BT.709. RGB out of RGB
// says nothing.
TEST(Plan, RgbIntoYCbCrTagsTheMatrixItUsed) {
  auto o = options("", "out.mkv");
  o.device = Device::kCpu;
  const ColorSpec rgb_colour = colour_of_tags(AVCOL_SPC_RGB, AVCOL_RANGE_JPEG, AV_PIX_FMT_RGB24);
  auto p = plan(o, {{AV_PIX_FMT_RGB24, 1280, 720}, "", rgb_colour}, no_gpu());
  EXPECT_FALSE(is_rgb(p.output.pix_fmt));
  EXPECT_TRUE(p.recoloured);
  EXPECT_EQ(p.colour, rgb_colour);
  EXPECT_TRUE(has_note(p, "colour: RGB converted to Y'CbCr as BT.601 limited range"));
  o.encoder = "ffv1";  // it takes RGB
  p = plan(o, {{AV_PIX_FMT_RGB24, 1280, 720}, "", rgb_colour}, no_gpu());
  EXPECT_TRUE(is_rgb(p.output.pix_fmt)) << to_string(p.output);
  EXPECT_FALSE(p.recoloured);
  EXPECT_FALSE(has_note(p, "colour:"));
}

TEST(Colour, OfTagsIsWhatSwscaleTakesThemFor) {
  EXPECT_EQ(colour_of_tags(AVCOL_SPC_BT709, AVCOL_RANGE_MPEG, AV_PIX_FMT_YUV420P),
            (ColorSpec{ColorMatrix::kBT709, ColorRange::kLimited}));
  EXPECT_EQ(colour_of_tags(AVCOL_SPC_UNSPECIFIED, AVCOL_RANGE_UNSPECIFIED, AV_PIX_FMT_YUVJ420P),
            (ColorSpec{ColorMatrix::kBT601, ColorRange::kFull, ChromaSiting::kCenter}));
  EXPECT_EQ(colour_of_tags(AVCOL_SPC_BT2020_NCL, AVCOL_RANGE_JPEG, AV_PIX_FMT_YUV420P10LE),
            (ColorSpec{ColorMatrix::kBT2020, ColorRange::kFull}));
  EXPECT_EQ(colour_of_tags(AVCOL_SPC_BT470BG, AVCOL_RANGE_MPEG, AV_PIX_FMT_NV12), kUntaggedColour);
  // PNG's RGB is full range; the Y'CbCr made of it is limited, as swscale makes it.
  EXPECT_EQ(colour_of_tags(AVCOL_SPC_RGB, AVCOL_RANGE_JPEG, AV_PIX_FMT_RGB24), kUntaggedColour);
  const ColourTags t =
      tags_of_colour({ColorMatrix::kBT2020, ColorRange::kLimited}, AV_PIX_FMT_YUV420P10LE);
  EXPECT_EQ(std::tuple(t.space, t.range, t.chroma),
            std::tuple(AVCOL_SPC_BT2020_NCL, AVCOL_RANGE_MPEG, AVCHROMA_LOC_LEFT));
}

// Issue #79 item 3: the siting is the stream's, else its codec's (centre for MPEG-1 and JPEG,
// left for the rest); it goes back out as the same tag on 4:2:0 and none elsewhere. RGB is GBR,
// full range, as FFmpeg tags it.
TEST(Colour, ChromaSitingIsTheStreamsOrItsCodecsAndGoesBackOutAsItCame) {
  const auto siting = [](AVChromaLocation loc, AVCodecID codec,
                         AVPixelFormat f = AV_PIX_FMT_YUV420P) {
    return colour_of_tags(AVCOL_SPC_BT709, AVCOL_RANGE_MPEG, f, loc, codec).siting;
  };
  EXPECT_EQ(siting(AVCHROMA_LOC_UNSPECIFIED, AV_CODEC_ID_H264), ChromaSiting::kLeft);
  EXPECT_EQ(siting(AVCHROMA_LOC_UNSPECIFIED, AV_CODEC_ID_HEVC), ChromaSiting::kLeft);
  EXPECT_EQ(siting(AVCHROMA_LOC_UNSPECIFIED, AV_CODEC_ID_MPEG2VIDEO), ChromaSiting::kLeft);
  EXPECT_EQ(siting(AVCHROMA_LOC_UNSPECIFIED, AV_CODEC_ID_MPEG1VIDEO), ChromaSiting::kCenter);
  EXPECT_EQ(siting(AVCHROMA_LOC_UNSPECIFIED, AV_CODEC_ID_MJPEG), ChromaSiting::kCenter);
  for (int loc = AVCHROMA_LOC_LEFT; loc <= AVCHROMA_LOC_BOTTOM; ++loc) {
    const auto l = static_cast<AVChromaLocation>(loc);
    const ColorSpec c = colour_of_tags(AVCOL_SPC_BT709, AVCOL_RANGE_MPEG, AV_PIX_FMT_YUV420P, l,
                                       AV_CODEC_ID_MPEG1VIDEO);
    EXPECT_EQ(tags_of_colour(c, AV_PIX_FMT_YUV420P).chroma, l) << loc;
    EXPECT_EQ(tags_of_colour(c, AV_PIX_FMT_NV12).chroma, l) << loc;
    EXPECT_EQ(tags_of_colour(c, AV_PIX_FMT_YUV444P).chroma, AVCHROMA_LOC_UNSPECIFIED) << loc;
  }
  for (const AVPixelFormat rgb : {AV_PIX_FMT_RGB24, AV_PIX_FMT_GBRP, AV_PIX_FMT_RGBA}) {
    const ColourTags t = tags_of_colour({ColorMatrix::kBT709, ColorRange::kLimited}, rgb);
    EXPECT_EQ(std::tuple(t.space, t.range, t.chroma),
              std::tuple(AVCOL_SPC_RGB, AVCOL_RANGE_JPEG, AVCHROMA_LOC_UNSPECIFIED));
  }
}

// Issue #44: several outputs from one decode. "PATH[:key=value…]" splits only
// at a key one output may set, so a URL's port and a filter's own ':' stay
// whole; a key that is the run's is refused naming it; the run's --vf comes
// before each output's own chain; --streams with --output is refused.
TEST(Outputs, EachOutputsKeysAreSplitOffItsPathAndTheRestAreTheRuns) {
  TranscodeOptions top;
  top.input = "in.mp4";
  top.output = "1080.mp4:vf=resize=1920x1080";
  top.crf = 20;
  top.outputs = {"srt://host:9000?mode=caller:encoder=mpeg4:qscale=5",
                 "480.mkv:vf=resize=854x480,blur=sigma=1.5:radius=2:crf=30"};
  const auto all = output_list(top);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].output, "1080.mp4");
  EXPECT_EQ(all[0].filters, "resize=1920x1080");
  EXPECT_EQ(all[0].crf, 20) << "the run's options are every output's default";
  EXPECT_EQ(all[1].output, "srt://host:9000?mode=caller");
  EXPECT_EQ(all[1].encoder, "mpeg4");
  EXPECT_EQ(all[1].qscale, 5);
  EXPECT_EQ(all[1].filters, "");
  EXPECT_EQ(all[2].output, "480.mkv");
  EXPECT_EQ(all[2].filters, "resize=854x480,blur=sigma=1.5:radius=2") << "a filter's ':' stays";
  EXPECT_EQ(all[2].crf, 30);
  for (const auto& o : all) EXPECT_TRUE(o.outputs.empty());

  TranscodeOptions one = top;
  one.outputs.clear();
  one.output = "plain.mp4";
  EXPECT_EQ(output_list(one).size(), 1u);
  EXPECT_EQ(output_list(one)[0].output, "plain.mp4");

  TranscodeOptions run_key = top;
  run_key.outputs = {"b.mp4:mem=vmm"};
  EXPECT_THROW((void)output_list(run_key), usage_error) << "mem is the run's";
  TranscodeOptions shared_vf = top;
  shared_vf.filters = "blur=sigma=1";
  const auto shared = output_list(shared_vf);
  EXPECT_EQ(shared[0].filters, "blur=sigma=1,resize=1920x1080");
  EXPECT_EQ(shared[1].filters, "blur=sigma=1") << "an output with no chain of its own";
  TranscodeOptions twice = top;
  twice.outputs = {"1080.mp4:crf=1"};
  EXPECT_THROW((void)output_list(twice), usage_error) << "one file named as two outputs";
  TranscodeOptions streams = top;
  streams.streams = 2;
  EXPECT_THROW(check_options(streams), usage_error);
  EXPECT_TRUE(find_option("crf")->per_output);
  EXPECT_FALSE(find_option("mem")->per_output);
}

// --hls DIR / --dash DIR: each output's PATH names a rendition in DIR; one
// ladder a run; a name with a '/' or none is refused, naming the flag.
TEST(Outputs, ALadderNamesEachRenditionsPlaylistOrManifestInItsFolder) {
  TranscodeOptions top;
  top.input = "in.mp4";
  top.output = "720p:vf=resize=1280x720";
  top.outputs = {"480p:vf=resize=854x480"};
  top.dash = "out";
  auto all = output_list(top);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].output, "out/720p/manifest.mpd");
  EXPECT_EQ(all[1].output, "out/480p/manifest.mpd");
  EXPECT_EQ(ladder_dir(all[1]), "out");
  top.dash.clear();
  top.hls = "out";
  EXPECT_EQ(output_list(top)[1].output, "out/480p/index.m3u8");
  top.dash = "out2";
  EXPECT_THROW((void)output_list(top), usage_error) << "--hls and --dash at once";
  top.hls.clear();
  top.outputs = {"a/b"};
  try {
    (void)output_list(top);
    FAIL() << "'a/b' is not a rendition name";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("dash: 'a/b' is not a rendition name"), std::string::npos)
        << e.what();
  }
}

// Issue #77: a rendition named like the ladder's own files, and a misspelt key right after
// an output's path (which became a file of that name), are refused; a filter's own
// ":key=value" after vf= stays the filter's.
TEST(Outputs, NamesThatWouldBeTheLaddersOwnAndMisspeltKeysAreRefused) {
  TranscodeOptions top;
  top.input = "in.mp4";
  top.hls = "out";
  for (const std::string name : {"master.m3u8", "manifest.mpd", ".vpipe-partial-1-1", ".x"}) {
    top.output = name;
    EXPECT_THROW((void)output_list(top), usage_error) << name;
  }
  top.hls.clear();
  top.output = "a.mp4";
  for (const std::string spec : {"b.mkv:bogus=1", "b.mkv:output=c.mkv", "b.mkv:input=c.mkv"}) {
    top.outputs = {spec};
    EXPECT_THROW((void)output_list(top), usage_error) << spec;
  }
  top.outputs = {"b.mkv:vf=resize=320x180:interp=bilinear:crf=30"};
  const auto all = output_list(top);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].output, "b.mkv");
  EXPECT_EQ(all[1].filters, "resize=320x180:interp=bilinear");
  EXPECT_EQ(all[1].crf, 30);
  // A key as its flag spells it (encode-segments) is the key (encode_segments); and one
  // output takes keys after its path as several do (it was "cannot tell the container").
  top.outputs = {"b.mkv:encode-segments=3:encoder=mpeg4"};
  EXPECT_EQ(output_list(top)[1].encode_segments, 3);
  EXPECT_EQ(output_list(top)[1].encoder, "mpeg4");
  top.outputs.clear();
  top.output = "one.mp4:encoder=mpeg4";
  top.filters = "resize=320x180";
  const auto one = output_list(top);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].output, "one.mp4");
  EXPECT_EQ(one[0].encoder, "mpeg4");
  EXPECT_EQ(one[0].filters, "resize=320x180");
}
