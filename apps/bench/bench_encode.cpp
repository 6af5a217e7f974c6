#include "bench_encode.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/parallel/segment_encode.hpp"
#include "vpipe/pipeline/session/encoder_controls.hpp"

#include <fmt/format.h>

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace vpipe::bench {

namespace {
bool takes(const AVCodec* codec, AVPixelFormat f) {
  if (!codec->pix_fmts) return true;
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == f) return true;
  return false;
}
}  // namespace

std::vector<Frame> collect_frames(TranscodeOptions o, const AVCodec* codec) {
  if (!takes(codec, AV_PIX_FMT_NV12) && codec->pix_fmts)
    o.filters += fmt::format("{}format={}", o.filters.empty() ? "" : ",",
                             av_get_pix_fmt_name(codec->pix_fmts[0]));
  o.output = "null";
  std::vector<Frame> frames;
  RunHooks hooks;
  hooks.on_frame = [&](const Frame& f) {  // the frame is a staging slot: keep a copy
    Frame copy = Frame::allocate_host(f.format);
    av_check(av_frame_copy(copy.av.get(), f.av.get()), "encode-only: copying a frame");
    copy.copy_props_from(f);
    frames.push_back(std::move(copy));
  };
  (void)transcode(o, hooks);
  if (frames.empty()) throw std::runtime_error("encode-only: no frames");
  return frames;
}

double encode_only_fps(TranscodeOptions o, const std::string& encoder, std::int64_t* frames_out) {
  const AVCodec* codec = avcodec_find_encoder_by_name(encoder.c_str());
  if (!codec) throw usage_error(fmt::format("encode-only: no encoder '{}'", encoder));
  std::vector<Frame> frames = collect_frames(o, codec);
  const FrameFormat fmt = frames.front().format;
  auto enc = open_video_encoder(
      codec, fmt, frames.front().time_base.num ? frames.front().time_base : AVRational{1, 90000},
      {30, 1}, false, o, nullptr);
  auto pkt = make_av_packet();
  std::int64_t packets = 0;
  auto drain = [&] {
    while (avcodec_receive_packet(enc.get(), pkt.get()) >= 0) {
      ++packets;
      av_packet_unref(pkt.get());
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& f : frames) {
    if (f.format != fmt) continue;
    f.av->pts = f.pts;
    f.av->pict_type = AV_PICTURE_TYPE_NONE;
    av_check(avcodec_send_frame(enc.get(), f.av.get()), "encode-only");
    drain();
  }
  av_check(avcodec_send_frame(enc.get(), nullptr), "encode-only flush");
  drain();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *frames_out = packets;
  return static_cast<double>(packets) / s;
}

}  // namespace vpipe::bench

// ---- vpipe bench encode: K encoders on GOP-aligned segments, joined -----------

namespace vpipe::bench {

namespace {

// One encoder's output: its packets (in its time base) and the stream's parameters.
struct EncodedRun {
  std::vector<Packet> packets;
  UniqueAVCodecParameters params{avcodec_parameters_alloc()};
  AVRational time_base{};
};

EncodedRun encode_run(std::span<Frame> frames, const AVCodec* codec, const TranscodeOptions& o) {
  const Frame& first = frames.front();
  auto enc = open_video_encoder(codec, first.format,
                                first.time_base.num ? first.time_base : AVRational{1, 90000},
                                {30, 1}, true, o, nullptr);
  for (Frame& f : frames) {  // (an encoder may change the time base: mpeg4 takes 1/rate)
    f.av->pts =
        av_rescale_q(f.pts, f.time_base.num ? f.time_base : AVRational{1, 90000}, enc->time_base);
    f.av->pict_type = AV_PICTURE_TYPE_NONE;
  }
  EncodedRun r;
  r.packets = encode_frames(enc.get(), frames, 0);
  av_check(avcodec_parameters_from_context(r.params.get(), enc.get()), "encoder parameters");
  r.time_base = enc->time_base;
  return r;
}

// Segment boundaries: K runs of whole GOPs, as even as the GOPs allow.
std::vector<std::size_t> segment_starts(std::size_t frames, int k, int gop) {
  const std::size_t gops =
      (frames + static_cast<std::size_t>(gop) - 1) / static_cast<std::size_t>(gop);
  std::vector<std::size_t> starts;
  for (int i = 0; i < k; ++i) {
    const std::size_t at = gops * static_cast<std::size_t>(i) / static_cast<std::size_t>(k);
    if (starts.empty() || at * static_cast<std::size_t>(gop) > starts.back())
      starts.push_back(at * static_cast<std::size_t>(gop));
  }
  return starts;
}

// The runs' packets one after the other into `path`, joined as
// --encode-segments joins them (continue_dts; the muxer refuses a DTS that
// goes back: a join that is not one stream fails here). Returns the bytes.
std::uintmax_t write_joined(const std::string& path, std::vector<EncodedRun>& runs) {
  AVFormatContext* raw = nullptr;
  av_check(avformat_alloc_output_context2(&raw, nullptr, nullptr, path.c_str()), path);
  UniqueMuxContext out(raw);
  AVStream* st = avformat_new_stream(out.get(), nullptr);
  av_check(avcodec_parameters_copy(st->codecpar, runs.front().params.get()), path);
  st->time_base = runs.front().time_base;
  AVDictionary* opts = nullptr;  // the allowed protocols only (protocols.hpp)
  vpipe::set_open_options(&opts, path, false);
  const int opened = avio_open2(&out->pb, path.c_str(), AVIO_FLAG_WRITE, nullptr, &opts);
  av_dict_free(&opts);
  av_check(opened, path);
  av_check(avformat_write_header(out.get(), nullptr), path + ": writing the header");
  std::int64_t last_dts = AV_NOPTS_VALUE;  // in the runs' time base (every run has the same)
  for (auto& run : runs) {
    continue_dts(run.packets, last_dts);
    for (auto& p : run.packets) {
      av_packet_rescale_ts(p.pkt.get(), run.time_base, st->time_base);
      p.pkt->stream_index = st->index;
      av_check(av_interleaved_write_frame(out.get(), p.pkt.get()), path + ": joining the segments");
    }
  }
  av_check(av_write_trailer(out.get()), path + ": writing the trailer");
  out.reset();
  return std::filesystem::file_size(path);
}

// Every frame's pts, decoded back from `path` (libavcodec, presentation order).
std::vector<std::int64_t> decoded_pts(const std::string& path) {
  auto in = open_input(path);
  const int vi = video_stream(*in, path);
  TranscodeOptions o;
  o.input = path;
  auto dec = open_decoder(in->streams[vi], o);
  std::vector<std::int64_t> pts;
  auto pkt = make_av_packet();
  auto frame = make_av_frame();
  auto receive = [&] {
    while (avcodec_receive_frame(dec.get(), frame.get()) >= 0) {
      pts.push_back(frame->best_effort_timestamp);
      av_frame_unref(frame.get());
    }
  };
  while (av_read_frame(in.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == vi) {
      av_check(avcodec_send_packet(dec.get(), pkt.get()), path + ": decoding back");
      receive();
    }
    av_packet_unref(pkt.get());
  }
  av_check(avcodec_send_packet(dec.get(), nullptr), path + ": decoding back");
  receive();
  return pts;
}

struct SegmentRow {
  int encoders = 0, segments = 0, threads_each = 0;
  double fps = 0;
  std::uintmax_t bytes = 0;
  std::vector<std::int64_t> pts;  // decoded back
};

// The frames as `k` GOP-aligned segments, each encoded by its own encoder in
// its own thread with its share of the cores (k = 1: one encoder, every
// thread), joined into `path` and decoded back.
SegmentRow encode_segmented(std::vector<Frame>& frames, int k, const AVCodec* codec,
                            TranscodeOptions o, const std::string& path) {
  const auto starts = segment_starts(frames.size(), k, o.gop);
  const int n = static_cast<int>(starts.size());
  o.encode_threads = n == 1 ? 0 : encode_threads_each(n);
  std::vector<EncodedRun> runs(starts.size());
  std::vector<std::exception_ptr> errors(starts.size());
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < starts.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          const std::size_t end = i + 1 < starts.size() ? starts[i + 1] : frames.size();
          runs[i] = encode_run(std::span(frames).subspan(starts[i], end - starts[i]), codec, o);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  SegmentRow r;
  r.encoders = k;
  r.segments = n;
  r.threads_each = o.encode_threads;
  r.fps = static_cast<double>(frames.size()) / s;
  r.bytes = write_joined(path, runs);
  r.pts = decoded_pts(path);
  return r;
}

bool increasing(const std::vector<std::int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::greater_equal<>()) == v.end();
}

// A folder of its own under the system's temporary directory, removed with
// everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view stem)
      : path_(std::filesystem::temp_directory_path() / fmt::format("{}_{}", stem, ::getpid())) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

int run_encode_bench(const EncodeBenchOptions& b) {
  vpipe::check_side_file(b.json_path, "--json", b.input, "null");
  const AVCodec* codec = avcodec_find_encoder_by_name(b.encoder.c_str());
  if (!codec) throw usage_error(fmt::format("bench encode: no encoder '{}'", b.encoder));
  TranscodeOptions o;
  o.input = b.input;
  o.filters = b.filters;
  o.decode = from_name<Decode>(b.decode, "decode");
  o.loop = b.loop;
  o.preset = b.preset;
  o.gop = b.gop;
  o.encoder = b.encoder;
  o.output = "bench encode";
  vpipe::check_controls(codec, o);  // a preset the encoder has not: refused, as transcode's
  std::vector<Frame> frames = collect_frames(o, codec);
  std::optional<ScratchDir> scratch;
  if (b.out_dir.empty()) scratch.emplace("vpipe_bench_encode");
  const std::filesystem::path dir = scratch ? scratch->path() : std::filesystem::path(b.out_dir);
  std::filesystem::create_directories(dir);
  fmt::print(
      "## {} on {} frames of {} ({}), GOP {}: one encoder with every thread against K encoders "
      "on GOP-aligned segments, joined\n\n| encoders | segments | threads each | fps | ÷ one "
      "encoder | frames decoded back | timestamps increasing | same timestamps as one encoder | "
      "bytes ÷ one encoder |\n|---|---|---|---|---|---|---|---|---|\n",
      b.encoder, frames.size(), b.input, to_string(frames.front().format), b.gop);
  nlohmann::json rows = nlohmann::json::array();
  for (int rep = 1; rep <= b.repeat; ++rep) {
    auto path = [&](int k) {
      return (dir / fmt::format("{}-k{}-r{}.mp4", b.encoder, k, rep)).string();
    };
    const SegmentRow one = encode_segmented(frames, 1, codec, o, path(1));
    for (const int k : b.segments) {
      const SegmentRow r = k == 1 ? one : encode_segmented(frames, k, codec, o, path(k));
      const bool same = r.pts == one.pts, up = increasing(r.pts);
      fmt::print("| {} | {} | {} | {:.0f} | {:.2f} | {} | {} | {} | {:.3f} |\n", k, r.segments,
                 r.threads_each == 0 ? std::string("auto") : std::to_string(r.threads_each), r.fps,
                 r.fps / one.fps, r.pts.size(), up ? "yes" : "NO", same ? "yes" : "NO",
                 static_cast<double>(r.bytes) / static_cast<double>(one.bytes));
      std::fflush(stdout);
      rows.push_back({{"encoders", k},
                      {"segments", r.segments},
                      {"threads_each", r.threads_each},
                      {"fps", r.fps},
                      {"one_encoder_fps", one.fps},
                      {"frames_in", frames.size()},
                      {"frames_decoded", r.pts.size()},
                      {"pts_increasing", up},
                      {"same_pts_as_one", same},
                      {"bytes", r.bytes},
                      {"one_encoder_bytes", one.bytes},
                      {"repeat", rep}});
    }
  }
  if (!b.json_path.empty()) {
    vpipe::write_file(b.json_path,
                      nlohmann::json{{"input", b.input},
                                     {"filters", b.filters},
                                     {"encoder", b.encoder},
                                     {"preset", b.preset},
                                     {"gop", b.gop},
                                     {"loop", b.loop},
                                     {"cores", std::thread::hardware_concurrency()},
                                     {"rows", rows}}
                              .dump(2) +
                          '\n',
                      "the JSON");
  }
  return 0;
}

}  // namespace vpipe::bench
