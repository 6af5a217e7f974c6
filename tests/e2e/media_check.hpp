// Helpers for end-to-end tests: run the vpipe binary, and inspect media files
// with libavformat / libavcodec (what a player would see).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "vpipe/kernels/reference.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/io/protocols.hpp"

namespace vpipe::test {

// Built with AddressSanitizer (CI's second pass): timings stretch, RSS grows
// by the allocator's quarantine. GCC says so with __SANITIZE_ADDRESS__, clang
// (the sanitizer build's compiler) with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define VPIPE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VPIPE_UNDER_ASAN 1
#endif
#endif
#ifndef VPIPE_UNDER_ASAN
#define VPIPE_UNDER_ASAN 0
#endif
inline constexpr bool kUnderAsan = VPIPE_UNDER_ASAN;

// Built-in paths (tests/paths.cpp), overridable where the tests run from a
// copied tree (the GPU machine): VPIPE_BIN, VPIPE_MEDIA_DIR and
// VPIPE_SOURCE_DIR in the environment.
extern const char* const kBuiltinBin;
extern const char* const kBuiltinMediaDir;
extern const char* const kBuiltinSourceDir;
inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
inline const std::string kBin = env_or("VPIPE_BIN", kBuiltinBin);
inline const std::string kSample = env_or("VPIPE_MEDIA_DIR", kBuiltinMediaDir) + "/sample-720p.mp4";

// The ffmpeg command-line tool, which some tests use to make inputs or send
// live streams. Where it is missing they skip, saying why, except under the
// test command: scripts/test installs it and sets VPIPE_REQUIRE_FFMPEG_TOOL,
// and there a missing tool fails (a skip would hide a broken install step).
inline bool have_ffmpeg_tool() { return std::system("command -v ffmpeg >/dev/null 2>&1") == 0; }
#define VPIPE_NEED_FFMPEG_TOOL()                                                            \
  do {                                                                                      \
    if (!::vpipe::test::have_ffmpeg_tool()) {                                               \
      if (std::getenv("VPIPE_REQUIRE_FFMPEG_TOOL")) FAIL() << "the ffmpeg tool is missing"; \
      GTEST_SKIP() << "no ffmpeg command-line tool here (scripts/test installs it)";        \
    }                                                                                       \
  } while (0)

// A suite's scratch folder: vpipe_NAME_PID under the temp folder (one per process: CTest
// runs each test as its own process, two at once), made before each test, removed after
// the suite. `class Audio : public ScratchSuite<Audio>` with `static constexpr const char*
// kName = "audio_test";` (and `kNeedsFfmpegTool = true` where it runs the ffmpeg tool).
template <class Suite>
class ScratchSuite : public ::testing::Test {
 protected:
  static std::filesystem::path dir() {
    return std::filesystem::temp_directory_path() /
           (std::string("vpipe_") + Suite::kName + "_" + std::to_string(::getpid()));
  }
  static std::string path(const std::string& name) { return (dir() / name).string(); }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir()); }
  void SetUp() override {
    if constexpr (Suite::kNeedsFfmpegTool) VPIPE_NEED_FFMPEG_TOOL();
    std::filesystem::create_directories(dir());
  }
};

// The standard output of `cmd`, run by the shell: the ffmpeg and ffprobe
// tools as oracles.
inline std::string shell_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  return out;
}

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `vpipe <args>` through the shell, capturing stdout and stderr;
// `wrapper` goes before the binary (a tool such as compute-sanitizer).
inline CommandResult run_vpipe(const std::string& args, const std::string& wrapper = "") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("vpipe_out_" + std::to_string(::getpid()));
  const auto err = dir / ("vpipe_err_" + std::to_string(::getpid()));
  const std::string cmd = (wrapper.empty() ? "" : wrapper + " ") + kBin + " " + args + " >" +
                          out.string() + " 2>" + err.string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// A port something already listens on (a plain socket: no SO_REUSEPORT, which
// would let a second bind in), for "address in use" tests. Closed when it goes.
class BusyPort {
 public:
  BusyPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::listen(fd_, 1) == 0 && ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port_ = ntohs(addr.sin_port);
  }
  ~BusyPort() { ::close(fd_); }
  BusyPort(const BusyPort&) = delete;
  BusyPort& operator=(const BusyPort&) = delete;
  [[nodiscard]] int port() const { return port_; }  // 0: could not listen

 private:
  int fd_;
  int port_ = 0;
};

struct StreamSummary {
  int video_packets = 0;
  int audio_packets = 0;
  int audio_streams = 0;
  int width = 0, height = 0;
  double video_duration_s = 0;  // last pts + one frame - first pts
  double frame_duration_s = 0;
  std::string video_codec;
};

inline StreamSummary summarize(const std::string& path) {
  auto ctx = open_input(path);
  StreamSummary s;
  const int v = av_find_best_stream(ctx.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (v < 0) return s;
  AVStream* vs = ctx->streams[v];
  s.width = vs->codecpar->width;
  s.height = vs->codecpar->height;
  s.video_codec = avcodec_get_name(vs->codecpar->codec_id);
  const AVRational rate = av_guess_frame_rate(ctx.get(), vs, nullptr);
  s.frame_duration_s = rate.num ? av_q2d(av_inv_q(rate)) : 0;
  for (unsigned i = 0; i < ctx->nb_streams; ++i)
    if (ctx->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) s.audio_streams++;
  auto pkt = make_av_packet();
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  while (av_read_frame(ctx.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == v) {
      s.video_packets++;
      if (pkt->pts != AV_NOPTS_VALUE) {
        first = std::min(first, pkt->pts);
        last = std::max(last, pkt->pts);
      }
    } else if (ctx->streams[pkt->stream_index]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
      s.audio_packets++;
    }
    av_packet_unref(pkt.get());
  }
  if (first <= last)
    s.video_duration_s = (last - first) * av_q2d(vs->time_base) + s.frame_duration_s;
  return s;
}

// Decodes every video frame of `path` (software, yuv420p expected), calling
// `on_frame` with each, in presentation order. Returns the frame count.
// `setup` may adjust the decoder before it opens (threads, get_buffer2).
inline int for_each_frame(const std::string& path,
                          const std::function<void(const Frame&)>& on_frame,
                          const std::function<void(AVCodecContext*)>& setup = {}) {
  auto ctx = open_input(path);
  const int v = av_find_best_stream(ctx.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  const AVCodec* codec = avcodec_find_decoder(ctx->streams[v]->codecpar->codec_id);
  UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
  avcodec_parameters_to_context(dec.get(), ctx->streams[v]->codecpar);
  if (setup) setup(dec.get());
  av_check(avcodec_open2(dec.get(), codec, nullptr), "open decoder");
  int n = 0;
  auto pkt = make_av_packet();
  auto drain = [&] {
    while (true) {
      auto f = make_av_frame();
      if (avcodec_receive_frame(dec.get(), f.get()) < 0) return;
      on_frame(Frame::from_av_frame(std::move(f), ctx->streams[v]->time_base));
      ++n;
    }
  };
  while (av_read_frame(ctx.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == v) {
      avcodec_send_packet(dec.get(), pkt.get());
      drain();
    }
    av_packet_unref(pkt.get());
  }
  avcodec_send_packet(dec.get(), nullptr);
  drain();
  return n;
}

// PSNR over all planes of two same-format frames.
inline double frame_psnr(const Frame& a, const Frame& b) {
  double mse_weighted = 0, samples = 0;
  for (int p = 0; p < a.num_planes; ++p) {
    const auto& pa = a.planes[static_cast<std::size_t>(p)];
    const auto& pb = b.planes[static_cast<std::size_t>(p)];
    const double psnr = ref::psnr(pa, pb);
    const double n = static_cast<double>(pa.width) * pa.height * pa.channels;
    mse_weighted += std::isinf(psnr) ? 0 : n * 255.0 * 255.0 / std::pow(10.0, psnr / 10.0);
    samples += n;
  }
  return mse_weighted == 0 ? INFINITY : 10 * std::log10(255.0 * 255.0 / (mse_weighted / samples));
}

// A YUV420P frame of w x h (chroma planes (w+1)/2 x (h+1)/2) whose sample
// of plane p at (x, y) is pixel(p, x, y) (truncated to 8 bits).
// A 4:2:0 frame, 8-bit (yuv420p) or 10-bit (yuv420p10le: `pixel` returns 0..1023).
inline UniqueAVFrame make_yuv420p_frame(int w, int h, std::int64_t pts,
                                        const std::function<int(int, int, int)>& pixel,
                                        AVPixelFormat pix_fmt = AV_PIX_FMT_YUV420P) {
  auto f = make_av_frame();
  f->format = pix_fmt;
  f->width = w;
  f->height = h;
  av_check(av_frame_get_buffer(f.get(), 0), "frame");
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pix_fmt);
  const bool wide = d->comp[0].depth > 8;
  const int cw = AV_CEIL_RSHIFT(w, d->log2_chroma_w), ch = AV_CEIL_RSHIFT(h, d->log2_chroma_h);
  for (int p = 0; p < 3; ++p)
    for (int y = 0; y < (p ? ch : h); ++y)
      for (int x = 0; x < (p ? cw : w); ++x) {
        std::uint8_t* at = f->data[p] + y * f->linesize[p] + (wide ? 2 * x : x);
        const int v = pixel(p, x, y);
        at[0] = static_cast<std::uint8_t>(v & 0xFF);
        if (wide) at[1] = static_cast<std::uint8_t>(v >> 8);
      }
  f->pts = pts;
  return f;
}

// Sends `frame` (null: flush) to `enc`, writing each packet out as `st`'s.
inline void encode_into(AVCodecContext* enc, AVFormatContext* oc, AVStream* st,
                        const AVFrame* frame) {
  av_check(avcodec_send_frame(enc, frame), "encode");
  auto pkt = make_av_packet();
  while (avcodec_receive_packet(enc, pkt.get()) >= 0) {
    av_packet_rescale_ts(pkt.get(), enc->time_base, st->time_base);
    pkt->stream_index = st->index;
    av_check(av_interleaved_write_frame(oc, pkt.get()), "write");
  }
}

// Writes a Matroska clip of `frames` YUV420P frames of w x h (pixel as
// make_yuv420p_frame takes it) with `encoder` ("ffv1": lossless; "libx264": crf 18).
// pix_fmt yuv420p10le (with libx265: HEVC Main 10) takes 10-bit values from `pixel`.
// `decorate(frame, i)` may add to each picture before it is encoded (side data, its field
// order); `configure(encoder)` may set the encoder up before it opens (interlaced coding).
inline void write_yuv420p_clip(const std::string& path, const char* encoder, int w, int h,
                               int frames, const std::function<int(int, int, int, int)>& pixel,
                               AVPixelFormat pix_fmt = AV_PIX_FMT_YUV420P,
                               const std::function<void(AVFrame*, int)>& decorate = {},
                               const std::function<void(AVCodecContext*)>& configure = {}) {
  AVFormatContext* raw = nullptr;
  av_check(avformat_alloc_output_context2(&raw, nullptr, "matroska", path.c_str()), "mkv");
  UniqueMuxContext oc(raw);
  const AVCodec* codec = avcodec_find_encoder_by_name(encoder);
  UniqueAVCodecContext enc(avcodec_alloc_context3(codec));
  enc->width = w;
  enc->height = h;
  enc->pix_fmt = pix_fmt;
  enc->time_base = {1, 25};
  enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  AVDictionary* opts = nullptr;
  if (std::string(encoder) == "libx264") av_dict_set(&opts, "crf", "18", 0);
  if (std::string(encoder) == "libx265") av_dict_set(&opts, "x265-params", "log-level=error", 0);
  if (configure) configure(enc.get());
  const int ret = avcodec_open2(enc.get(), codec, &opts);
  av_dict_free(&opts);
  av_check(ret, encoder);
  AVStream* st = avformat_new_stream(oc.get(), nullptr);
  av_check(avcodec_parameters_from_context(st->codecpar, enc.get()), "params");
  st->time_base = enc->time_base;
  av_check(avio_open(&oc->pb, path.c_str(), AVIO_FLAG_WRITE), "open " + path);
  av_check(avformat_write_header(oc.get(), nullptr), "header");
  for (int i = 0; i < frames; ++i) {
    const auto f = make_yuv420p_frame(
        w, h, i, [&](int p, int x, int y) { return pixel(i, p, x, y); }, pix_fmt);
    if (decorate) decorate(f.get(), i);
    encode_into(enc.get(), oc.get(), st, f.get());
  }
  encode_into(enc.get(), oc.get(), st, nullptr);
  av_check(av_write_trailer(oc.get()), "trailer");
}

// The closed captions of one picture: its ATSC A/53 cc_data triplets.
using Captions = std::vector<std::uint8_t>;

// Frame i's: the "resume caption loading" command, then two bytes of its own.
inline Captions captions_of(int i) {
  return {0xFC,
          0x94,
          0x20,
          0xFC,
          static_cast<std::uint8_t>(0x80 + i % 100),
          static_cast<std::uint8_t>(0x81 + i % 100)};
}

// An H.264 clip (libx264, 320×240) of `frames` pictures, each with its closed captions
// (captions_of), which libx264 writes as SEI. Returns them, in order.
inline std::vector<Captions> write_captioned_clip(const std::string& path, int frames) {
  std::vector<Captions> all;
  write_yuv420p_clip(
      path, "libx264", 320, 240, frames,
      [](int i, int p, int x, int y) { return (i + p + x + y) % 256; }, AV_PIX_FMT_YUV420P,
      [&](AVFrame* f, int i) {
        all.push_back(captions_of(i));
        AVFrameSideData* sd = av_frame_new_side_data(f, AV_FRAME_DATA_A53_CC, all.back().size());
        if (!sd) throw std::bad_alloc();
        std::copy(all.back().begin(), all.back().end(), sd->data);
      });
  return all;
}

// `frames` pictures of 320x240 (25), top field first, coded as fields by libx264: the top
// field's rows luma 60, the bottom's 200 (a comb as strong as motion leaves), chroma grey.
inline void write_interlaced_clip(const std::string& path,
                                  AVPixelFormat pix_fmt = AV_PIX_FMT_YUV420P, int frames = 25) {
  write_yuv420p_clip(
      path, "libx264", 320, 240, frames,
      [](int, int plane, int, int y) { return plane   ? 128
                                              : y % 2 ? 200
                                                      : 60; }, pix_fmt,
      [](AVFrame* f, int) { set_field_order(FieldOrder::kTopFirst, *f); },
      [](AVCodecContext* enc) {
        enc->flags |= AV_CODEC_FLAG_INTERLACED_DCT | AV_CODEC_FLAG_INTERLACED_ME;
        enc->field_order = AV_FIELD_TT;
      });
}

// What a file's pictures say of fields, as libavcodec decodes them.
struct FieldStats {
  int count = 0, top_first = 0, bottom_first = 0, progressive = 0;
  double comb = 0;         // mean |luma(x, y) - luma(x, y + 1)| over every picture
  double chroma_comb = 0;  // the same of the first chroma plane (Cb)
  double luma = 0;         // mean luma
};
inline FieldStats field_stats(const std::string& path) {
  FieldStats s;
  double comb = 0, luma = 0, n = 0, chroma_comb = 0, chroma_n = 0;
  for_each_frame(path, [&](const Frame& f) {
    s.count++;
    s.top_first += f.fields == FieldOrder::kTopFirst;
    s.bottom_first += f.fields == FieldOrder::kBottomFirst;
    s.progressive += f.fields == FieldOrder::kProgressive;
    const PlaneView& y = f.planes[0];
    for (int r = 0; r + 1 < y.height; ++r)
      for (int x = 0; x < y.width; ++x, ++n) {
        comb += std::abs(y.row(r)[x] - y.row(r + 1)[x]);
        luma += y.row(r)[x];
      }
    const PlaneView& cb = f.planes[1];
    for (int r = 0; r + 1 < cb.height; ++r)
      for (int x = 0; x < cb.width; ++x, ++chroma_n)
        chroma_comb += std::abs(cb.row(r)[x] - cb.row(r + 1)[x]);
  });
  s.comb = n ? comb / n : 0;
  s.chroma_comb = chroma_n ? chroma_comb / chroma_n : 0;
  s.luma = n ? luma / n : 0;
  return s;
}

// Each picture's closed captions, in display order, as libavcodec's decoder reads them.
inline std::vector<Captions> captions_in(const std::string& path) {
  std::vector<Captions> all;
  for_each_frame(path, [&](const Frame& f) {
    const AVFrameSideData* sd = av_frame_get_side_data(f.av.get(), AV_FRAME_DATA_A53_CC);
    all.push_back(sd ? Captions(sd->data, sd->data + sd->size) : Captions{});
  });
  return all;
}

// A w×h RGBA picture written as PNG through libavcodec's encoder (the device
// machine has no ffmpeg tool): the overlay filter's watermark.
inline void write_rgba_png(const std::string& path, int w, int h,
                           const std::function<std::array<int, 4>(int, int)>& rgba) {
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  if (!codec) throw std::runtime_error("no PNG encoder in this FFmpeg");
  UniqueAVCodecContext enc(avcodec_alloc_context3(codec));
  enc->width = w;
  enc->height = h;
  enc->pix_fmt = AV_PIX_FMT_RGBA;
  enc->time_base = {1, 25};
  av_check(avcodec_open2(enc.get(), codec, nullptr), "png encoder");
  UniqueAVFrame f = make_av_frame();
  f->width = w;
  f->height = h;
  f->format = AV_PIX_FMT_RGBA;
  av_check(av_frame_get_buffer(f.get(), 0), "png frame");
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c)
        f->data[0][y * f->linesize[0] + 4 * x + c] = static_cast<std::uint8_t>(rgba(x, y)[c]);
  av_check(avcodec_send_frame(enc.get(), f.get()), "png encode");
  av_check(avcodec_send_frame(enc.get(), nullptr), "png flush");
  UniqueAVPacket pkt = make_av_packet();
  av_check(avcodec_receive_packet(enc.get(), pkt.get()), "png packet");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(pkt->data), pkt->size);
}

// The sweeps' --vf with the sizes of a w x h clip filled in: {w2}x{h2} half
// the size (even), {x},{y} a crop offset inside it, {wp}x{hp} room for the
// picture at (8, 4) with a border (even).
inline std::string expand_sweep_vf(std::string vf, int w, int h) {
  const int w2 = std::max(2, w / 4 * 2), h2 = std::max(2, h / 4 * 2);
  const int wp = (w + 1) / 2 * 2 + 16, hp = (h + 1) / 2 * 2 + 8;
  for (const auto& [key, value] : std::vector<std::pair<std::string, int>>{{"{w2}", w2},
                                                                           {"{h2}", h2},
                                                                           {"{x}", w2 / 4 * 2},
                                                                           {"{y}", h2 / 4 * 2},
                                                                           {"{wp}", wp},
                                                                           {"{hp}", hp}})
    for (auto at = vf.find(key); at != std::string::npos; at = vf.find(key))
      vf.replace(at, key.size(), std::to_string(value));
  return vf;
}

// The largest |a - b| over every sample of every plane (same formats).
inline int max_abs_diff(const Frame& a, const Frame& b) {
  int worst = 0;
  for (int p = 0; p < a.num_planes; ++p) {
    const auto& pa = a.planes[static_cast<std::size_t>(p)];
    const auto& pb = b.planes[static_cast<std::size_t>(p)];
    for (int y = 0; y < pa.height; ++y)
      for (int x = 0; x < pa.width * pa.channels; ++x)
        worst = std::max(worst, std::abs(int(pa.row(y)[x]) - int(pb.row(y)[x])));
  }
  return worst;
}

// Writes an MPEG-TS H.264 clip whose picture size changes mid-stream: for each
// {width, height} in `sizes`, `frames_each` frames of a moving gradient from a
// fresh libx264 (in-band SPS/PPS, as a broadcast feed that switches does).
inline void write_size_change_clip(const std::string& path,
                                   const std::vector<std::pair<int, int>>& sizes, int frames_each) {
  AVFormatContext* raw = nullptr;
  av_check(avformat_alloc_output_context2(&raw, nullptr, "mpegts", path.c_str()), "mpegts");
  UniqueMuxContext oc(raw);
  AVStream* st = avformat_new_stream(oc.get(), nullptr);
  st->time_base = {1, 90000};
  st->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
  st->codecpar->codec_id = AV_CODEC_ID_H264;
  st->codecpar->width = sizes.front().first;
  st->codecpar->height = sizes.front().second;
  av_check(avio_open(&oc->pb, path.c_str(), AVIO_FLAG_WRITE), "open " + path);
  av_check(avformat_write_header(oc.get(), nullptr), "header");
  std::int64_t pts = 0;
  for (const auto& [w, h] : sizes) {
    const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
    UniqueAVCodecContext enc(avcodec_alloc_context3(codec));
    enc->width = w;
    enc->height = h;
    enc->pix_fmt = AV_PIX_FMT_YUV420P;
    enc->time_base = {1, 25};
    enc->gop_size = frames_each;
    AVDictionary* opts = nullptr;
    av_dict_set(&opts, "preset", "ultrafast", 0);
    const int ret = avcodec_open2(enc.get(), codec, &opts);
    av_dict_free(&opts);
    av_check(ret, "libx264");
    for (int i = 0; i < frames_each; ++i, ++pts) {
      const auto f = make_yuv420p_frame(
          w, h, pts, [&](int p, int x, int y) { return x * (p + 1) + y + 5 * pts; });
      encode_into(enc.get(), oc.get(), st, f.get());
    }
    encode_into(enc.get(), oc.get(), st, nullptr);
  }
  av_check(av_write_trailer(oc.get()), "trailer");
}

// Picture sizes of every decoded frame of `path`, in order.
inline std::vector<std::pair<int, int>> frame_sizes(const std::string& path) {
  std::vector<std::pair<int, int>> sizes;
  for_each_frame(path,
                 [&](const Frame& f) { sizes.emplace_back(f.format.width, f.format.height); });
  return sizes;
}

}  // namespace vpipe::test
