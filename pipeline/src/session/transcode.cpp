#include "vpipe/pipeline/session/transcode.hpp"
#include "vpipe/pipeline/parallel/gpu_placement.hpp"

#include <map>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <thread>

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/filters/cuda_stages.hpp"
#include "vpipe/pipeline/graph/host_frames.hpp"
#include "vpipe/pipeline/io/hw_probe.hpp"
#include "vpipe/pipeline/io/live.hpp"
#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"
#include "vpipe/pipeline/io/nvml_load.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/parallel/segment_decode.hpp"
#include "vpipe/pipeline/parallel/segment_encode.hpp"
#include "vpipe/pipeline/session/frame_graph.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {

// The output: written beside its target and put in place when finished (StagedOutput).
// Members die in this order: the muxer closes the file before the staging removes
// it, and before the watch its I/O context polls.
struct OutputFile {
  std::optional<OutputWatch> watch;  // a stream's writes: Ctrl-C ends one that blocks
  std::optional<StagedOutput> file;
  UniqueMuxContext ctx;
  std::string path;  // as the user named it

  // A stream output (StagedOutput::stream): after Ctrl-C, a write its reader
  // leaves waiting for 1 s ends the writing (OutputWatch).
  void open(const std::string& target, bool keep_partial, const std::atomic<int>* interrupt) {
    file.emplace(target, keep_partial);
    AVIOInterruptCB* cb = nullptr;
    AVIOInterruptCB stream_cb{};
    if (file->stream() && interrupt) {
      stream_cb = watch.emplace(interrupt, 1.0).callback();
      cb = &stream_cb;
    }
    AVFormatContext* oc = ctx.get();
    if (const int ret =
            avio_open2(&oc->pb, file->write_url().c_str(), AVIO_FLAG_WRITE, cb, nullptr);
        ret < 0)
      throw input_error(fmt::format("cannot open output '{}': {}", target, av_error_text(ret)));
    if (watch) watch->follow(oc->pb);
    file->opened();
  }

  // Complete (or finalized after Ctrl-C): closed, checked to open, then in place.
  // (AVERROR_EXIT: a stream whose writing stopped at Ctrl-C; what was written stays.)
  void finished() {
    AVFormatContext* oc = ctx.get();
    if (oc && !(oc->oformat->flags & AVFMT_NOFILE))
      if (const int ret = avio_closep(&oc->pb); ret < 0 && ret != AVERROR_EXIT)
        throw input_error(fmt::format("writing '{}': {}", path, av_error_text(ret)));
    ctx.reset();
    if (file && file->staged()) check_it_opens();
    if (file) file->commit();
  }

 private:
  void check_it_opens() const {
    try {
      (void)open_input(file->write_url());
    } catch (const std::exception& e) {
      throw input_error(fmt::format(
          "'{}': the finished output does not open ({}); the file already there, if any, "
          "is left as it was",
          path, e.what()));
    }
  }
};

// Up to three segments per session wait in device memory (copied out of
// NVDEC's surfaces): a longer GOP → one session, so they stay bounded.
constexpr std::size_t kNvdecSegment = 120;

}  // namespace

UniqueAVCodecContext open_decoder(AVStream* stream, const TranscodeOptions& o, NvdecContext* nvdec,
                                  int nvdec_frames_held, HostFramePool* host_pool) {
  const AVCodec* codec = avcodec_find_decoder(stream->codecpar->codec_id);
  if (!codec)
    throw input_error(fmt::format("{}: no decoder for video codec '{}'", o.input,
                                  avcodec_get_name(stream->codecpar->codec_id)));
  UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
  av_check(avcodec_parameters_to_context(dec.get(), stream->codecpar), "decoder parameters");
  dec->pkt_timebase = stream->time_base;
  dec->thread_count = o.decode_threads;
  // Frame threads hold a frame per thread before the first comes out: a live
  // input decodes with slice threads only, and asks for low delay.
  const bool live = is_live_input(o.input);
  dec->thread_type = live ? FF_THREAD_SLICE : FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (live) dec->flags |= AV_CODEC_FLAG_LOW_DELAY;
  if (nvdec) nvdec->attach(dec.get(), nvdec_frames_held);
  if (host_pool) host_pool->attach(dec.get());
  if (const int ret = avcodec_open2(dec.get(), codec, nullptr); ret < 0)
    throw input_error(fmt::format("{}: cannot open the {} decoder: {}", o.input, codec->name,
                                  av_error_text(ret)));
  return dec;
}

UniqueAVCodecContext open_video_encoder(const AVCodec* codec, const FrameFormat& format,
                                        AVRational time_base, AVRational frame_rate,
                                        bool global_header, const TranscodeOptions& o,
                                        const AVCodecContext* props, AVRational sample_aspect) {
  UniqueAVCodecContext enc(avcodec_alloc_context3(codec));
  enc->width = format.width;
  enc->height = format.height;
  enc->pix_fmt = format.pix_fmt;
  enc->time_base = time_base;
  enc->framerate = frame_rate;
  // MPEG-1/2, H.263 and DV encoders take their frame rate from the time base
  // (the input's, e.g. 1/15360, was "15360 fps", refused); MPEG-4 part 2 limits it.
  const auto id = codec->id;
  if (frame_rate.num > 0 && frame_rate.den > 0 &&
      (id == AV_CODEC_ID_MPEG1VIDEO || id == AV_CODEC_ID_MPEG2VIDEO || id == AV_CODEC_ID_H263 ||
       id == AV_CODEC_ID_DVVIDEO || (id == AV_CODEC_ID_MPEG4 && time_base.den > 65535)))
    enc->time_base = av_inv_q(frame_rate);
  enc->sample_aspect_ratio = sample_aspect;
  if (props) {
    enc->color_range = props->color_range;
    enc->colorspace = props->colorspace;
    enc->color_primaries = props->color_primaries;
    enc->color_trc = props->color_trc;
  }
  enc->thread_count = o.encode_threads;
  if (o.gop > 0) enc->gop_size = o.gop;
  if (global_header) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  AVDictionary* enc_opts = nullptr;
  const std::string name = codec->name;
  if (name == "libx264") {
    av_dict_set(&enc_opts, "crf", std::to_string(o.crf).c_str(), 0);
    av_dict_set(&enc_opts, "preset", o.preset.c_str(), 0);
    // Live (a live input, a paced run, a network output): no lookahead, no
    // B-frames: a frame leaves the encoder as it enters.
    if (is_live_input(o.input) || o.realtime || !network_output_format(o.output).empty())
      av_dict_set(&enc_opts, "tune", "zerolatency", 0);
  } else if (name == "h264_nvenc" || name == "hevc_nvenc") {
    av_dict_set(&enc_opts, "cq", std::to_string(o.crf).c_str(), 0);
    av_dict_set(&enc_opts, "preset", "p4", 0);
  } else if (name == "libx265") {
    // x265 logs its banner at info level on its own: warnings only, unless -v.
    if (av_log_get_level() < AV_LOG_WARNING)
      av_dict_set(&enc_opts, "x265-params", "log-level=warning", 0);
  } else if (codec->id == AV_CODEC_ID_MPEG4) {
    enc->flags |= AV_CODEC_FLAG_QSCALE;
    enc->global_quality = FF_QP2LAMBDA * o.qscale;
  }
  const FfmpegErrors ffmpeg;  // the encoder's own words: the detail FFmpeg's code lacks
  const int ret = avcodec_open2(enc.get(), codec, &enc_opts);
  av_dict_free(&enc_opts);
  if (ret < 0)
    throw input_error(fmt::format("{}: cannot open encoder {} for {}: {}{}", o.output, codec->name,
                                  to_string(format), av_error_text(ret), ffmpeg.why()));
  return enc;
}

// The report's JSON (field names as the committed runs and scripts/results read them).
using nlohmann::json;

void to_json(json& j, const Percentiles& p) {
  j = {{"p50", p.p50}, {"p99", p.p99}, {"max", p.max}};
}

void to_json(json& j, const GlassReport& g) {
  j = g.ms;
  j["frames_with_stamp"] = g.frames_with_stamp;
  j["frames_without"] = g.frames_without;
  j["steady"] = g.steady_ms;
  j["steady"]["note"] = "frames read 2 s or more after the first stamp";
  j["steady"]["frames"] = g.steady_frames;
}

void to_json(json& j, const InFlightReport& f) {
  j = {{"limit", f.limit},
       {"high_water", f.high_water},
       {"dropped_at_limit", f.dropped_at_limit},
       {"decoder_waited_s", f.decoder_waited_s}};
}

void to_json(json& j, const RingReport& r) {
  j = {{"slots", r.slots}, {"acquires", r.acquires}, {"waits", r.waits}, {"waited_s", r.waited_s}};
}

void to_json(json& j, const MemoryReport& m) {
  const auto opt = [](const auto& v) { return v ? json(*v) : json(); };
  j = {{"strategy", m.strategy},
       {"allocations", m.allocations},
       {"bytes_peak", m.bytes_peak},
       {"bytes_total", m.bytes_total},
       {"failures", m.failures},
       {"retries", m.retries},
       {"failures_after_retry", m.failures_after_retry},
       {"budget_bytes", opt(m.budget_bytes)},
       {"device_syncs", m.device_syncs},
       {"allocate_us", m.allocate_us},
       {"reserved_bytes", opt(m.reserved_bytes)},
       {"host_staging", m.host_staging},
       {"download", m.download},
       {"pinned_bytes", m.pinned_bytes}};
  if (m.upload_ring) j["upload_ring"] = *m.upload_ring;
  if (m.upload)
    j["upload"] = {{"direct_from_decoder", m.upload->direct_from_decoder},
                   {"unstaged", m.upload->unstaged}};
  if (const auto& p = m.decoded_into_pinned)
    j["decoded_into_pinned"] = {
        {"frames", p->frames}, {"buffers", p->buffers}, {"bytes", p->bytes}};
  if (m.download_ring) j["download_ring"] = *m.download_ring;
  if (const auto& n = m.nvdec_pool)
    j["nvdec_pool"] = {
        {"buffers", n->buffers}, {"bytes", n->bytes}, {"decode_surfaces", n->decode_surfaces}};
}

nlohmann::json TranscodeReport::to_json() const {
  using nlohmann::json;
  auto fmt_json = [](const FrameFormat& f) {
    const char* n = av_get_pix_fmt_name(f.pix_fmt);
    return json{{"width", f.width}, {"height", f.height}, {"pix_fmt", n ? n : "none"}};
  };
  json stages_j = json::array();
  for (const auto& s : stages) {
    stages_j.push_back(
        {{"name", s.name},
         {"items_in", s.items_in},
         {"items_out", s.items_out},
         {"busy_s", s.busy_s},
         {"busy_ms_per_item", s.items_in ? 1e3 * s.busy_s / static_cast<double>(s.items_in) : 0.0},
         {"latency_ms", {{"p50", s.item_ms_p50}, {"p99", s.item_ms_p99}, {"max", s.item_ms_max}}}});
    if (s.gpu_ms_per_item) stages_j.back()["gpu_ms_per_item"] = *s.gpu_ms_per_item;
  }
  json queues_j = json::array();
  for (const auto& q : queues)
    queues_j.push_back({{"name", q.name},
                        {"capacity", q.capacity},
                        {"high_water", q.high_water},
                        {"pushed", q.pushed},
                        {"producer_blocked_s", q.producer_blocked_s},
                        {"dropped", q.dropped}});
  return {{"input", input},
          {"output", output},
          {"filters", filters},
          {"effective_chain", effective_chain},
          {"device", device},
          {"decode", decode},
          {"encoder", encoder},
          {"input_format", fmt_json(input_format)},
          {"output_format", fmt_json(output_format)},
          {"frames",
           {{"packets_read", packets_read},
            {"decoded", frames_decoded},
            {"encoded", frames_encoded},
            {"video_packets_written", video_packets_written},
            {"other_packets_written", other_packets_written},
            {"decode_errors", decode_errors},
            {"fitted_to_encoder", frames_fitted},
            {"timestamp_discontinuities", ts_discontinuities},
            {"timestamps_repaired", timestamps_repaired},
            {"copied_packets_damaged", packets_damaged},
            {"errors", errors()},
            {"dropped", frames_dropped}}},
          {"live", live},
          {"drop_policy", drop},
          {"stalls", stalls},
          {"reconnects", reconnects},
          {"copied_streams", copied_streams},
          {"wall_s", wall_s},
          {"fps", fps},
          {"steady_fps", steady_fps},
          {"latency_ms",
           {{"p50", latency_ms_p50},
            {"p90", latency_ms_p90},
            {"p99", latency_ms_p99},
            {"max", latency_ms_max}}},
          {"glass_to_glass_ms", glass ? json(*glass) : json()},
          {"in_flight", in_flight ? json(*in_flight) : json()},
          {"interrupted", interrupted},
          {"output_cut", output_cut},
          {"status", !failure.empty() ? "failed: " + failure
                     : decode_errors  ? fmt::format("completed with {} errors", decode_errors)
                                      : std::string(interrupted ? "interrupted" : "ok")},
          {"stages", stages_j},
          {"memory", memory ? json(*memory) : json()},
          {"queues", queues_j},
          {"notes", notes}};
}

namespace {

// The input stream's display matrix (a phone's rotation), on the output stream: the picture is
// stored as decoded and a player turns it as it turned the input. (FFmpeg 6.1 moved stream side
// data into codecpar.)
void copy_display_matrix(const AVStream* in, AVStream* out) {
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 31, 102)
  const AVPacketSideData* sd = av_packet_side_data_get(
      in->codecpar->coded_side_data, in->codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX);
  if (!sd) return;
  AVPacketSideData* copy =
      av_packet_side_data_new(&out->codecpar->coded_side_data, &out->codecpar->nb_coded_side_data,
                              AV_PKT_DATA_DISPLAYMATRIX, sd->size, 0);
  if (copy) std::memcpy(copy->data, sd->data, sd->size);
#else
  std::size_t size = 0;
  const std::uint8_t* matrix = av_stream_get_side_data(in, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (!matrix) return;
  if (std::uint8_t* copy = av_stream_new_side_data(out, AV_PKT_DATA_DISPLAYMATRIX, size))
    std::memcpy(copy, matrix, size);
#endif
}

// Whether reading `url` again from its start gives the same input: not a pipe (pipe:,
// fd:, "-"), a live feed, or a local FIFO, character device or socket (whatever prefix
// names it: local_files_of). Files, file:/// and seekable network files (http) can.
bool can_read_again(const std::string& url) {
  if (url == "-" || url.rfind("pipe:", 0) == 0 || url.rfind("fd:", 0) == 0 || is_live_input(url))
    return false;
  std::error_code ec;
  for (const auto& f : local_files_of(url)) {
    const auto st = fs::status(f, ec);
    if (fs::is_fifo(st) || fs::is_character_file(st) || fs::is_socket(st)) return false;
  }
  return true;
}

// What can be checked before any file is opened: a typo must not cost a decode.
void check_paths(const TranscodeOptions& o) {
  std::error_code ec;
  if (o.output != "null" && same_file(o.input, o.output))
    throw usage_error(fmt::format("{}: the output would overwrite the input", o.output));
  if (fs::exists(o.input, ec) && fs::is_regular_file(o.input, ec) &&
      fs::file_size(o.input, ec) == 0)
    throw input_error(fmt::format("cannot open input '{}': the file is empty", o.input));
  if (o.output != "null" && o.output.find("://") == std::string::npos)
    check_writable(o.output, "output");
  if (o.loop > 1 && !can_read_again(o.input))
    throw usage_error(fmt::format(
        "loop {}: '{}' cannot be read again (a pipe, FIFO or live feed gives one pass); "
        "loop a file",
        o.loop, o.input));
}

std::string drop_name(DropPolicy d) {
  return std::string(name_of(d == DropPolicy::kDropOldest   ? Drop::kDropOldest
                             : d == DropPolicy::kDropNewest ? Drop::kDropNewest
                                                            : Drop::kBlock));
}

RingReport ring_report(const PinnedRing& r) {
  const auto s = r.stats();
  return {r.slot_count(), s.acquires, s.waits, s.waited_s};
}

Percentiles percentiles(const Histogram& h, double scale) {
  return {static_cast<double>(h.percentile(0.50)) * scale,
          static_cast<double>(h.percentile(0.99)) * scale, static_cast<double>(h.max()) * scale};
}

}  // namespace

// Every resource of one run, declared in the order they must die, last first:
// the pipeline's stages hold raw pointers to the contexts, rings, streams and
// memory above them, so the pipeline goes first; the encoder can still hold a
// download slot when a run stops early, so the rings outlive it (an H200 run
// once aborted in that release); frames free their device memory on the
// streams, so the streams outlive the frames and the strategy outlives both;
// the output file is closed, and removed unless kept, when nothing writes it.
struct TranscodeSession::Parts {
  Parts(TranscodeOptions options, RunHooks run_hooks);
  void open_input();
  void open_output();
  void add_video_output();
  void copy_other_streams();
  void make_cuda_path();
  void wire();
  void add_decode(QueuePtr<Packet> packets, QueuePtr<Frame> frames);
  void choose_decode_sessions();
  [[nodiscard]] std::int64_t expected_frames() const;
  void collect(TranscodeReport& r) const;
  [[nodiscard]] MemoryReport memory_report() const;
  [[nodiscard]] LiveStats live_stats(Clock::time_point t0) const;

  TranscodeOptions o;
  RunHooks hooks;
  TranscodeReport report;
  InputWatch watch;  // the input's interrupt callback points here
  InputOpenOptions open_options;
  UniqueDemuxContext input;
  int video_index = -1;
  AVStream* video = nullptr;
  AVRational frame_rate{0, 1};
  UniqueAVCodecContext decoder;  // handed to the decode stage when wired
  TranscodePlan plan;
  OutputFile output;
  std::vector<int> output_index;      // input stream → output stream (-1: not copied)
  std::vector<AVRational> source_tb;  // per output stream, the time base packets arrive in
  AVStream* video_out = nullptr;
  std::optional<MemoryStrategy> own_strategy;
  MemoryStrategy* strategy = nullptr;   // own_strategy, or the one --streams share
  std::unique_ptr<RetryAdaptor> retry;  // out of memory: trim, retry, then fail
  StreamSet streams;
  std::unique_ptr<NvdecContext> nvdec;       // NVDEC's frames hold its surfaces
  std::unique_ptr<HostFramePool> host_pool;  // CPU decode straight into pinned memory
  std::optional<FrameGraph> graph;           // its ring slots are frames, the encoder's too
  UniqueAVCodecContext encoder;
  MediaCounters counters;
  std::optional<FlightLimit> flight;  // frames hold its tickets
  std::mutex sessions_mutex;          // --decode-sessions: workers open their sessions at once
  Pipeline pipeline;
  DemuxSource* demux = nullptr;  // owned by the pipeline: woken from a blocking read by Ctrl-C
  MuxSink* mux = nullptr;        // owned by the pipeline: woken from a blocking write by Ctrl-C
  SegmentDecodeStage* segments = nullptr;  // owned by the pipeline (--decode-sessions)
  std::string auto_sessions_note;          // --decode-sessions auto: what it chose, and why
};

TranscodeSession::Parts::Parts(TranscodeOptions options, RunHooks run_hooks)
    : o(std::move(options)),
      hooks(std::move(run_hooks)),
      // A file has no stall limit (a slow disk is not a dead feed), but Ctrl-C
      // still ends a wait for it (a FIFO with no writer).
      watch(is_live_input(o.input) ? o.stall_timeout_s : kNoStallLimit, hooks.interrupt) {
  check_options(o);
  for (const auto& s : parse_chain(o.filters))
    (void)parse_params(FilterRegistry::instance().info(s.name), s.args);
  check_paths(o);
  report.input = o.input;
  report.output = o.output;
  report.filters = o.filters;
  open_input();
  MachineProbe machine;
  if (o.device != Device::kCpu) machine.cuda_unavailable = cuda_unavailable_reason();
  machine.nvenc = [] {
    const auto n = probe_nvenc();
    return std::pair{n.usable, n.detail};
  };
  plan = vpipe::plan(o,
                     {{decoder->pix_fmt, decoder->width, decoder->height},
                      nvdec_unsupported_reason(video->codecpar)},
                     machine);
  if (plan.live)
    report.notes.push_back(fmt::format(
        "live input: low-latency open, drop policy {}, stall timeout {} s, {}",
        drop_name(plan.drop), o.stall_timeout_s,
        can_reconnect(o.input) ? fmt::format("up to {} reconnect(s)", o.reconnect)
                               : std::string("no connection to reopen (it waits for data)")));
  report.notes.insert(report.notes.end(), plan.notes.begin(), plan.notes.end());
  report.device = plan.device == Device::kCuda ? "cuda" : "cpu";
  report.decode = plan.nvdec ? "nvdec" : "cpu";
  report.encoder = plan.encoder ? plan.encoder->name : "none (null output)";
  report.live = plan.live;
  report.drop = drop_name(plan.drop);
  report.input_format = plan.decoded;
  report.output_format = plan.output;
  report.effective_chain = plan.labels();
  if (!plan.null_output) open_output();
  make_cuda_path();
  wire();
}

void TranscodeSession::Parts::open_input() {
  for (const auto& kv : o.input_options) {
    const auto eq = kv.find('=');
    open_options.extra.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  open_options.watch = &watch;  // Ctrl-C from the start; a live input's stalls too
  open_options.low_latency = is_live_input(o.input);
  try {
    input = vpipe::open_input(o.input, open_options);
  } catch (const ffmpeg_error& e) {
    throw input_error(e.what());
  }
  video_index = av_find_best_stream(input.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (video_index < 0) throw input_error(fmt::format("{}: no video stream", o.input));
  video = input->streams[video_index];
  frame_rate = av_guess_frame_rate(input.get(), video, nullptr);
  decoder = open_decoder(video, o);
  if (decoder->pix_fmt == AV_PIX_FMT_NONE || decoder->width <= 0)
    throw input_error(fmt::format("{}: cannot tell the video's size and pixel format", o.input));
}

void TranscodeSession::Parts::open_output() {
  AVFormatContext* raw = nullptr;
  const std::string net = network_output_format(o.output);
  if (avformat_alloc_output_context2(&raw, nullptr, net.empty() ? nullptr : net.c_str(),
                                     o.output.c_str()) < 0 ||
      !raw)
    throw input_error(
        fmt::format("{}: cannot tell the container from the name (use .mp4, .mkv, "
                    ".mov, .ts…, udp://host:port for MPEG-TS over UDP, or null to "
                    "write nothing)",
                    o.output));
  output.ctx.reset(raw);
  output.path = o.output;
  AVFormatContext* oc = output.ctx.get();
  // A live run has no natural end: an MP4/MOV being written is fragmented, so
  // the file is playable at any moment, even if the process is killed. (Not
  // empty_moov: the moov would be written before the ADTS→ASC filter has seen
  // MPEG-TS's AAC, and the muxer refuses it.)
  const std::string oname = oc->oformat->name;
  if (plan.live && (oname == "mp4" || oname == "mov")) {
    av_opt_set(oc->priv_data, "movflags", "frag_keyframe+default_base_moof", 0);
    report.notes.push_back("live input: the MP4 is written fragmented (playable while written)");
  }
  add_video_output();
  copy_other_streams();
  av_dict_copy(&oc->metadata, input->metadata, 0);
  if (!(oc->oformat->flags & AVFMT_NOFILE)) output.open(o.output, o.keep_partial, hooks.interrupt);
  const FfmpegErrors ffmpeg;
  if (const int ret = avformat_write_header(oc, nullptr); ret < 0)
    throw input_error(
        fmt::format("cannot write '{}': {}{}", o.output, av_error_text(ret), ffmpeg.why()));
}

void TranscodeSession::Parts::add_video_output() {
  AVFormatContext* oc = output.ctx.get();
  if (o.encode_segments > 1) {  // every segment's encoder gets the output encoder's settings
    o.gop = encode_segment_frames(o.gop);
    if (o.encode_threads == 0) o.encode_threads = encode_threads_each(o.encode_segments);
    report.notes.push_back(
        fmt::format("encode: {} encoders at once on segments of {} frames, {} threads each",
                    o.encode_segments, o.gop, o.encode_threads));
  }
  // The picture keeps its display shape through the chain (non-square pixels: DV, HDV, DVD,
  // broadcast SD) and its display turn (a phone's rotation).
  const AVRational sar =
      sample_aspect_after(plan.chain, av_guess_sample_aspect_ratio(input.get(), video, nullptr));
  // MXF and DV files state one frame rate in their time base (MXF refused 1/15360).
  const std::string container = oc->oformat->name;
  const bool frame_rate_tb =
      (container.rfind("mxf", 0) == 0 || container == "dv") && frame_rate.num > 0;
  encoder = open_video_encoder(
      plan.encoder, plan.output, frame_rate_tb ? av_inv_q(frame_rate) : video->time_base,
      frame_rate, (oc->oformat->flags & AVFMT_GLOBALHEADER) != 0, o, decoder.get(), sar);
  video_out = avformat_new_stream(oc, nullptr);
  av_check(avcodec_parameters_from_context(video_out->codecpar, encoder.get()),
           "output video parameters");
  video_out->sample_aspect_ratio = encoder->sample_aspect_ratio;
  copy_display_matrix(video, video_out);
  // Its tags (language, a broadcast timecode, which MOV writes as a tmcd track), but not the
  // input's encoder: this output's is another.
  av_dict_copy(&video_out->metadata, video->metadata, 0);
  av_dict_set(&video_out->metadata, "encoder", nullptr, 0);
  video_out->time_base = encoder->time_base;
  video_out->avg_frame_rate = encoder->framerate;
  source_tb.push_back(encoder->time_base);
}

// Audio and subtitles the container can hold, copied; the rest dropped, each with a note.
void TranscodeSession::Parts::copy_other_streams() {
  AVFormatContext* oc = output.ctx.get();
  output_index.assign(input->nb_streams, -1);
  for (unsigned i = 0; i < input->nb_streams; ++i) {
    AVStream* s = input->streams[i];
    const auto type = s->codecpar->codec_type;
    if (static_cast<int>(i) == video_index) continue;
    if (type != AVMEDIA_TYPE_AUDIO && type != AVMEDIA_TYPE_SUBTITLE) {
      // Data (a timecode track: its timecode goes on the video stream's tags) and attachments,
      // and further video streams: said, not silently gone.
      char tag[AV_FOURCC_MAX_STRING_SIZE] = {};
      const char* media = av_get_media_type_string(type);
      const std::string what = s->codecpar->codec_id != AV_CODEC_ID_NONE
                                   ? avcodec_get_name(s->codecpar->codec_id)
                                   : av_fourcc_make_string(tag, s->codecpar->codec_tag);
      report.notes.push_back(fmt::format(
          "stream #{} ({}, {}) not copied: vpipe copies audio and subtitles beside the video it "
          "transcodes",
          i, media ? media : "unknown", what));
      continue;
    }
    if (container_holds(oc->oformat, s->codecpar->codec_id) == false) {
      report.notes.push_back(fmt::format("stream #{} ({}) dropped: {} cannot hold it", i,
                                         avcodec_get_name(s->codecpar->codec_id),
                                         oc->oformat->name));
      continue;
    }
    AVStream* os = avformat_new_stream(oc, nullptr);
    av_check(avcodec_parameters_copy(os->codecpar, s->codecpar), "copying stream parameters");
    os->codecpar->codec_tag = 0;
    os->time_base = s->time_base;
    av_dict_copy(&os->metadata, s->metadata, 0);
    os->disposition = s->disposition;
    output_index[i] = os->index;
    source_tb.push_back(s->time_base);
    report.copied_streams++;
  }
}

// The strategy, its retry gate, NVDEC or the pinned decode pool, the graph.
void TranscodeSession::Parts::make_cuda_path() {
  CudaPath cuda;
  cuda.streams = &streams;
  cuda.host = o.host;
  cuda.download_copy = o.download_copy;
  cuda.graphs = o.graphs;
  if (plan.device_memory) {
    if (hooks.shared_memory) {
      strategy = hooks.shared_memory;
    } else {
      StrategyOptions so;
      so.budget = o.budget;
      own_strategy.emplace(make_strategy(o.mem, so));
      strategy = &*own_strategy;
    }
    retry = std::make_unique<RetryAdaptor>(strategy->resource(), strategy->strategy());
    cuda.memory = retry.get();
  }
  if (plan.nvdec) {
    try {
      nvdec = std::make_unique<NvdecContext>(*retry, streams.make());
    } catch (const std::exception& e) {
      throw input_error(fmt::format("decode nvdec: {}", e.what()));
    }
    decoder = open_decoder(video, o, nvdec.get(), plan.queues.nvdec_extra_surfaces);
  } else if (plan.decode_into_pinned) {
    host_pool = std::make_unique<HostFramePool>(HostMemory::kPinned);
    decoder = open_decoder(video, o, nullptr, 0, host_pool.get());
  }
  graph.emplace(cuda, plan.drop, plan.queues);
}

void TranscodeSession::Parts::wire() {
  if (o.max_in_flight > 0) flight.emplace(o.max_in_flight, plan.drop != DropPolicy::kBlock);
  auto packets = pipeline.make_queue<Packet>("demux→decode", plan.queues.packets);
  auto mux_in = pipeline.make_queue<Packet>("→mux", plan.queues.mux);
  auto demux_stage = std::make_unique<DemuxSource>(input.get(), o.input, video_index, output_index,
                                                   mux_in, counters, o.realtime);
  demux = demux_stage.get();
  demux_stage->interrupt(hooks.interrupt);
  if (o.loop > 1)
    demux_stage->loop(o.loop, [this] { return vpipe::open_input(o.input, open_options); });
  if (plan.live) {
    demux_stage->watch(&watch);
    if (can_reconnect(o.input) && o.reconnect > 0)
      demux_stage->reconnect(o.reconnect,
                             [this] { return vpipe::open_input(o.input, open_options); });
  }
  if (o.max_frames && frame_rate.num > 0) {
    const double start = video->start_time != AV_NOPTS_VALUE
                             ? static_cast<double>(video->start_time) * av_q2d(video->time_base)
                             : 0.0;
    demux_stage->copy_until(start + static_cast<double>(*o.max_frames) / av_q2d(frame_rate));
  }
  pipeline.add_source<Packet>(std::move(demux_stage), packets);
  auto frames = graph->frame_queue(pipeline, "decode→", plan.queues.decoded);
  add_decode(packets, frames);
  const bool empty_chain = plan.chain.empty();
  frames = graph->add_chain(pipeline, frames, std::move(plan.chain), plan.cuda, plan.nvdec);
  // Frames end in host memory, where an encoder takes them; a decode-only
  // null run (no filter), or one asked to, leaves them on the device.
  if (!(plan.null_output && (empty_chain || hooks.frames_on_device)))
    frames = graph->to_host(pipeline, frames, plan.output);
  if (plan.null_output) {
    auto sink = std::make_unique<NullSink>(counters, hooks.on_frame);
    sink->read_stamps(o.read_stamps);
    pipeline.add_sink<Frame>(std::move(sink), frames);
    return;
  }
  auto add_encode = [&](auto encode) {
    encode->read_stamps(o.read_stamps);
    pipeline.add_stage<Frame, Packet>(std::move(encode), frames, mux_in);
  };
  if (o.encode_segments > 1) {
    auto open = [this, global = (output.ctx->oformat->flags & AVFMT_GLOBALHEADER) != 0] {
      return open_video_encoder(plan.encoder, plan.output, video->time_base, frame_rate, global, o,
                                encoder.get(), encoder->sample_aspect_ratio);
    };
    add_encode(std::make_unique<SegmentedEncodeStage>(open, encoder.get(), video_out->index,
                                                      counters, o.encode_segments, o.gop));
  } else {
    add_encode(std::make_unique<EncodeStage>(encoder.get(), video_out->index, counters));
  }
  auto mux_stage =
      std::make_unique<MuxSink>(output.ctx.get(), o.output, source_tb, video_out->index, counters);
  mux = mux_stage.get();
  pipeline.add_sink<Packet>(std::move(mux_stage), mux_in);
}

// One decoder, or --decode-sessions N decoding segments at once, each with
// its own session (NVDEC: its own frames context, which holds a segment).
void TranscodeSession::Parts::add_decode(QueuePtr<Packet> packets, QueuePtr<Frame> frames) {
  choose_decode_sessions();
  if (o.decode_sessions <= 1) {
    auto decode = std::make_unique<DecodeStage>(std::move(decoder), video->time_base, o.max_frames,
                                                counters, nvdec.get());
    if (flight) decode->limit_in_flight(&*flight);
    pipeline.add_stage<Packet, Frame>(std::move(decode), packets, frames);
    return;
  }
  auto session = [this] {
    DecoderSession s;
    std::lock_guard lock(
        sessions_mutex);  // StreamSet and the strategy's first use are not concurrent
    if (plan.nvdec) {
      s.nvdec = std::make_unique<NvdecContext>(*retry, streams.make());
      // Its frames are copies (segment_decode.cpp): no surface is held downstream.
      s.context = open_decoder(video, o, s.nvdec.get(), 2);
    } else {
      s.context = open_decoder(video, o);
    }
    return s;
  };
  const std::size_t most = o.segment_packets ? o.segment_packets : plan.nvdec ? kNvdecSegment : 600;
  auto stage = std::make_unique<SegmentDecodeStage>(o.decode_sessions, session, video->time_base,
                                                    o.max_frames, counters, most);
  segments = stage.get();
  pipeline.add_stage<Packet, Frame>(std::move(stage), packets, frames);
}

// --decode-sessions auto: auto_decode_sessions() with this input, NVML's
// decoder load now, and the budget or the device's free memory.
void TranscodeSession::Parts::choose_decode_sessions() {
  if (o.decode_sessions != TranscodeOptions::kAutoSessions) return;
  AutoSessionsInput in;
  in.nvdec = plan.nvdec;
  in.codec = video->codecpar->codec_id;
  in.frame_bytes = packed_bytes(plan.decoded);
  in.segment_frames = kNvdecSegment;
  int device = 0;
  if (plan.nvdec && cudaGetDevice(&device) == cudaSuccess) {
    in.engine_load_pct = decoder_load_now(device);
    std::size_t free = 0, total = 0;
    if (o.budget)
      in.memory_bytes = *o.budget;
    else if (cudaMemGetInfo(&free, &total) == cudaSuccess)
      in.memory_bytes = free;
  }
  const AutoSessions pick = auto_decode_sessions(in, TranscodeOptions::kAutoNvdecSessions);
  o.decode_sessions = pick.sessions;
  auto_sessions_note =
      fmt::format("decode: decode_sessions auto: {} ({})", pick.sessions, pick.why);
}

// Expected frame count, for progress (0: unknown).
std::int64_t TranscodeSession::Parts::expected_frames() const {
  std::int64_t total = video->nb_frames;
  if (total <= 0 && input->duration > 0 && frame_rate.num > 0)
    total = static_cast<std::int64_t>(static_cast<double>(input->duration) / AV_TIME_BASE *
                                      av_q2d(frame_rate));
  total *= o.loop;
  if (o.max_frames && (total <= 0 || *o.max_frames < total)) total = *o.max_frames;
  return total;
}

void TranscodeSession::Parts::collect(TranscodeReport& r) const {
  if (!auto_sessions_note.empty()) r.notes.push_back(auto_sessions_note);
  if (segments) {
    const auto st = segments->stats();
    r.notes.push_back(
        fmt::format("decode: {} sessions over {} segments (GOPs), {} open (decoded after the GOP "
                    "before), {} decoder restarts{}",
                    o.decode_sessions, st.segments, st.open_gops, st.restarts,
                    st.fell_back.empty() ? "" : "; " + st.fell_back + ": one session took over"));
  }
  if (const auto g = graph ? graph->graph_stats() : std::nullopt)
    r.notes.push_back(fmt::format("graphs: {} launches, {} captures, {} node updates refused{}",
                                  g->launches, g->captures, g->updates_refused,
                                  g->fallback.empty() ? "" : "; then launches: " + g->fallback));
  r.packets_read = counters.packets_read;
  r.frames_decoded = counters.frames_decoded;
  r.frames_encoded = counters.frames_encoded;
  r.video_packets_written = counters.video_packets_written;
  r.other_packets_written = counters.other_packets_written;
  r.decode_errors = counters.decode_errors;
  r.frames_fitted = counters.frames_fitted;
  r.ts_discontinuities = counters.ts_discontinuities;
  r.timestamps_repaired = counters.timestamps_repaired;
  r.packets_damaged = counters.packets_damaged;
  r.stalls = counters.stalls;
  r.reconnects = counters.reconnects;
  if (o.read_stamps) {
    r.glass =
        GlassReport{percentiles(counters.glass_ns, 1e-6), counters.stamps_read.load(),
                    counters.stamps_missing.load(), percentiles(counters.glass_steady_ns, 1e-6),
                    static_cast<std::int64_t>(counters.glass_steady_ns.count())};
    if (counters.stamps_read == 0)
      r.notes.push_back(
          "read_stamps: no frame carried a stamp (send with the filter chain stamp,…)");
  }
  r.fps = r.wall_s > 0 ? static_cast<double>(r.video_packets_written) / r.wall_s : 0;
  r.steady_fps = counters.steady_fps();
  r.latency_ms_p50 = static_cast<double>(counters.latency_ns.percentile(0.50)) * 1e-6;
  r.latency_ms_p90 = static_cast<double>(counters.latency_ns.percentile(0.90)) * 1e-6;
  r.latency_ms_p99 = static_cast<double>(counters.latency_ns.percentile(0.99)) * 1e-6;
  r.latency_ms_max = static_cast<double>(counters.latency_ns.max()) * 1e-6;
  r.stages = pipeline.stage_stats();
  r.queues = pipeline.queue_stats();
  for (const auto& q : r.queues) r.frames_dropped += static_cast<std::int64_t>(q.dropped);
  if (flight) {
    r.frames_dropped += flight->dropped();
    r.in_flight = InFlightReport{flight->limit(), flight->high_water(), flight->dropped(),
                                 flight->waited_s()};
  }
  if (strategy) r.memory = memory_report();
}

// The strategy's statistics and the staging, for the report.
MemoryReport TranscodeSession::Parts::memory_report() const {
  const auto st = strategy->stats().stats();
  MemoryReport m;
  m.strategy = name_of(o.mem);
  m.allocations = st.count.total;
  m.bytes_peak = st.bytes.peak;
  m.bytes_total = st.bytes.total;
  m.failures = st.failures;
  m.retries = retry->retries();
  m.failures_after_retry = retry->failures();
  m.budget_bytes = o.budget;
  m.device_syncs = st.device_syncs;
  m.allocate_us = percentiles(strategy->stats().allocate_latency(), 1e-3);
  m.reserved_bytes = strategy->strategy().usage().reserved;
  m.host_staging = name_of(o.host);
  m.download = o.download_copy ? "copied out of the slot" : "slot is the encoder's frame";
  m.pinned_bytes =
      graph->pinned_bytes() + (host_pool ? static_cast<std::size_t>(host_pool->bytes()) : 0);
  if (const auto* ring = graph->upload_ring()) m.upload_ring = ring_report(*ring);
  if (const auto* up = graph->upload_stage())
    m.upload = MemoryReport::Upload{up->direct(), up->unstaged()};
  if (host_pool)
    m.decoded_into_pinned =
        MemoryReport::PinnedDecode{host_pool->frames(), host_pool->buffers(), host_pool->bytes()};
  if (const auto* ring = graph->download_ring()) m.download_ring = ring_report(*ring);
  if (nvdec)
    m.nvdec_pool = MemoryReport::NvdecPool{nvdec->pool_buffers(), nvdec->pool_bytes(),
                                           nvdec->decode_surfaces()};
  return m;
}

TranscodeSession::TranscodeSession(TranscodeOptions options, RunHooks hooks)
    : parts_(std::make_unique<Parts>(std::move(options), std::move(hooks))) {}
TranscodeSession::~TranscodeSession() = default;
const TranscodePlan& TranscodeSession::plan() const { return parts_->plan; }

// While a run goes on: what a metrics endpoint shows (any thread).
LiveStats TranscodeSession::Parts::live_stats(Clock::time_point t0) const {
  LiveStats s;
  s.stream = hooks.stream_label;
  s.input = o.input;
  s.output = o.output;
  s.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  s.packets_read = counters.packets_read;
  s.frames_decoded = counters.frames_decoded;
  s.frames_written = counters.video_packets_written;
  s.decode_errors = counters.decode_errors;
  s.stalls = counters.stalls;
  s.reconnects = counters.reconnects;
  s.latency_ms_p50 = static_cast<double>(counters.latency_ns.percentile(0.50)) * 1e-6;
  s.latency_ms_p99 = static_cast<double>(counters.latency_ns.percentile(0.99)) * 1e-6;
  s.latency_ms_max = static_cast<double>(counters.latency_ns.max()) * 1e-6;
  s.glass_frames = static_cast<std::int64_t>(counters.glass_ns.count());
  s.glass_ms_p50 = static_cast<double>(counters.glass_ns.percentile(0.50)) * 1e-6;
  s.glass_ms_p99 = static_cast<double>(counters.glass_ns.percentile(0.99)) * 1e-6;
  s.queues = pipeline.queue_stats();
  for (const auto& q : s.queues) s.frames_dropped += static_cast<std::int64_t>(q.dropped);
  if (strategy) {
    const auto st = strategy->stats().stats();
    s.strategy = name_of(o.mem);
    s.memory_in_use = st.bytes.value;
    s.memory_peak = st.bytes.peak;
    const auto usage = strategy->strategy().usage();
    s.memory_reserved =
        usage.reserved ? static_cast<std::int64_t>(*usage.reserved) : s.memory_in_use;
    s.allocation_failures = st.failures;
    s.allocation_retries = retry ? static_cast<std::int64_t>(retry->retries()) : 0;
    s.pinned_bytes =
        static_cast<std::int64_t>(graph->pinned_bytes()) + (host_pool ? host_pool->bytes() : 0);
  }
  return s;
}

TranscodeReport TranscodeSession::run() {
  Parts& p = *parts_;
  TranscodeReport report = p.report;
  const std::int64_t total = p.expected_frames();
  const auto t0 = Clock::now();
  // A metrics endpoint sees the run from now until run() returns.
  struct Listed {
    LiveRegistry* live;
    const void* run;
    ~Listed() {
      if (live) live->remove(run);
    }
  } listed{p.hooks.live, this};
  if (p.hooks.live) p.hooks.live->add(this, [&p, t0] { return p.live_stats(t0); });
  std::jthread monitor([&](std::stop_token stop) {  // Ctrl-C and progress, ~4 times a second
    auto next_progress = Clock::now();
    auto next_wake = Clock::now();
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (p.hooks.interrupt && p.hooks.interrupt->load()) {
        if (!p.pipeline.stop_requested()) {
          p.pipeline.request_stop();
          report.interrupted = true;
        }
        if (Clock::now() >= next_wake) {  // a read or write blocked in the kernel: break it
          next_wake = Clock::now() + std::chrono::milliseconds(250);
          p.demux->wake();
          if (p.mux) p.mux->wake();
        }
      }
      if (p.hooks.on_progress && Clock::now() >= next_progress) {
        next_progress += std::chrono::milliseconds(250);
        p.hooks.on_progress({p.counters.video_packets_written.load(), total,
                             std::chrono::duration<double>(Clock::now() - t0).count()});
      }
    }
  });
  std::string failure;
  bool gpu_fault = false;
  try {
    p.pipeline.run();
  } catch (const cuda_error& e) {
    failure = e.what();
    gpu_fault = true;
  } catch (const std::exception& e) {
    failure = e.what();  // reported below, then thrown with the report
  }
  monitor.request_stop();
  monitor.join();
  report.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (p.hooks.on_progress)
    p.hooks.on_progress({p.counters.video_packets_written.load(), total, report.wall_s});
  p.collect(report);
  report.output_cut = p.mux && p.mux->cut();
  if (!failure.empty()) {
    report.failure = failure;
    throw transcode_failed(failure, std::move(report), gpu_fault);  // the partial output goes
  }
  if (p.counters.disconnects > 0)
    report.notes.push_back(
        "the live input ended with a read error (the sender closed the connection)");
  if (report.stalls > 0)
    report.notes.push_back(fmt::format(
        "the input stalled {} time(s) (no data for {} s){}", report.stalls, p.o.stall_timeout_s,
        report.reconnects ? fmt::format("; reconnected {} time(s)", report.reconnects)
                          : std::string()));
  if (report.frames_decoded == 0)
    throw input_error(fmt::format("{}: no video frame could be decoded", p.o.input));
  p.output.finished();
  return report;
}

TranscodeReport transcode(const TranscodeOptions& options, const RunHooks& hooks) {
  return TranscodeSession(options, hooks).run();
}

bool is_gpu_fault(const std::exception& e) {
  if (const auto* failed = dynamic_cast<const transcode_failed*>(&e)) return failed->gpu_fault;
  return dynamic_cast<const cuda_error*>(&e) != nullptr;
}

std::string stream_output_name(const std::string& output, int k) {
  if (output == "null") return output;
  if (output.find("://") != std::string::npos)
    throw input_error(
        fmt::format("streams: {} is a URL; give a file name (each stream writes "
                    "its own, with -1, -2… added) or null",
                    output));
  const fs::path p(output);
  return (p.parent_path() / fmt::format("{}-{}{}", p.stem().string(), k, p.extension().string()))
      .string();
}

std::int64_t MultiTranscodeReport::frames_written() const {
  std::int64_t frames = 0;
  for (const auto& r : streams) frames += r.video_packets_written;
  return frames;
}

double MultiTranscodeReport::fps_total() const {
  return wall_s > 0 ? static_cast<double>(frames_written()) / wall_s : 0.0;
}

nlohmann::json MultiTranscodeReport::to_json() const {
  nlohmann::json per = nlohmann::json::array();
  std::int64_t dropped = 0;
  double p99_max = 0;
  std::map<int, std::pair<std::int64_t, std::int64_t>> per_gpu;  // device → streams, frames written
  for (std::size_t i = 0; i < streams.size(); ++i) {
    auto j = streams[i].to_json();
    if (!failures[i].empty()) j["status"] = "failed: " + failures[i];
    const int gpu = i < gpus.size() ? gpus[i] : -1;
    if (gpu >= 0) {
      j["gpu"] = gpu;
      per_gpu[gpu].first += 1;
      per_gpu[gpu].second += streams[i].video_packets_written;
    }
    per.push_back(std::move(j));
    dropped += streams[i].frames_dropped;
    p99_max = std::max(p99_max, streams[i].latency_ms_p99);
  }
  nlohmann::json gpu_totals = nlohmann::json::array();
  for (const auto& [gpu, t] : per_gpu)
    gpu_totals.push_back({{"gpu", gpu},
                          {"streams", t.first},
                          {"frames_written", t.second},
                          {"fps", wall_s > 0 ? static_cast<double>(t.second) / wall_s : 0.0}});
  const auto failed =
      std::count_if(failures.begin(), failures.end(), [](const auto& f) { return !f.empty(); });
  return {{"streams", per},
          {"gpus", gpu_totals},
          {"aggregate",
           {{"streams", streams.size()},
            {"failed", failed},
            {"frames_written", frames_written()},
            {"frames_dropped", dropped},
            {"wall_s", wall_s},
            {"fps_total", fps_total()},
            {"latency_ms_p99_worst_stream", p99_max}}}};
}

namespace {
// The GPUs of a multi-stream run and their strategies (none on the CPU path).
class GpuShares {
 public:
  explicit GpuShares(const TranscodeOptions& o) : placer_(loads_of(o, strategies_)) {}
  // Each stream's device (-1: the CPU path), placed one after another (before any runs).
  std::vector<int> place(int n) {
    std::vector<int> out(static_cast<std::size_t>(n), -1);
    if (!placer_.empty())
      for (auto& d : out) d = placer_.place();
    return out;
  }
  // A stream failed with a CUDA error on `device` (--on-gpu-error move): that GPU takes no
  // more streams; the GPU this stream goes to, or nothing when no other can take it.
  std::optional<int> move_from(int device) { return placer_.move_from(device); }
  // Makes `device` current on the calling thread; its strategy.
  MemoryStrategy& use(int device) {
    VPIPE_CUDA_TRY(cudaSetDevice(device));
    return strategies_.at(device);
  }

 private:
  // One strategy per GPU, each made with its device current, and the GPUs' loads.
  static std::vector<GpuLoad> loads_of(const TranscodeOptions& o,
                                       std::map<int, MemoryStrategy>& strategies) {
    std::vector<GpuLoad> loads;
    if (o.device == Device::kCpu || !cuda_unavailable_reason().empty()) return loads;
    int current = 0;
    VPIPE_CUDA_TRY(cudaGetDevice(&current));
    for (const int d : o.gpus.empty() ? std::vector<int>{current} : o.gpus) {
      VPIPE_CUDA_TRY(cudaSetDevice(d));
      StrategyOptions so;
      so.budget = o.budget;
      strategies.emplace(d, make_strategy(o.mem, so));
      std::size_t free = 0, total = 0;
      VPIPE_CUDA_TRY(cudaMemGetInfo(&free, &total));
      loads.push_back({d, 0, 1, 0, o.budget.value_or(free), 0});
    }
    VPIPE_CUDA_TRY(cudaSetDevice(current));
    return loads;
  }
  std::map<int, MemoryStrategy> strategies_;  // before placer_: loads_of fills it
  GpuPlacer placer_;
};

// One stream of transcode_streams: `mine` on `gpu` (-1: the CPU path). With --on-gpu-error
// move, a CUDA error there starts the stream again on the GPU move_from gives (its output
// rewritten from the start), until it ends or no GPU is left; each move is a note in the
// report. Returns the failure, empty when the stream ended well; `gpu` ends as its last GPU.
std::string run_stream(const TranscodeOptions& mine, RunHooks hooks, GpuShares& gpus, int& gpu,
                       TranscodeReport& report) {
  std::vector<std::string> moves;
  std::string failure;
  for (;;) {
    if (gpu >= 0) hooks.shared_memory = &gpus.use(gpu);  // this thread on that GPU
    bool gpu_fault = false;
    failure.clear();
    try {
      report = transcode(mine, hooks);
    } catch (const std::exception& e) {
      const auto* failed = dynamic_cast<const transcode_failed*>(&e);
      report = failed ? failed->report : TranscodeReport{};
      report.input = mine.input;
      report.output = mine.output;
      failure = e.what();
      gpu_fault = is_gpu_fault(e);
    }
    if (!gpu_fault || gpu < 0 || mine.on_gpu_error != OnGpuError::kMove) break;
    const auto to = gpus.move_from(gpu);
    if (!to) {
      failure += fmt::format(" (on GPU {}; on_gpu_error move: no other GPU can take it)", gpu);
      break;
    }
    moves.push_back(fmt::format("moved from GPU {} to GPU {} after: {}", gpu, *to, failure));
    spdlog::warn("stream {}: {}", hooks.stream_label, moves.back());
    gpu = *to;
  }
  report.notes.insert(report.notes.begin(), moves.begin(), moves.end());
  return failure;
}
}  // namespace

MultiTranscodeReport transcode_streams(const TranscodeOptions& o, const RunHooks& hooks) {
  const int n = o.streams;
  if (n < 1) throw input_error(fmt::format("streams {}: expected 1 or more", n));
  std::vector<std::string> outputs;
  for (int k = 1; k <= n; ++k)
    outputs.push_back(n == 1 ? o.output : stream_output_name(o.output, k));
  // On the device: one strategy per GPU (no allocation crosses devices), each
  // made with its device current, and every stream placed by headroom.
  GpuShares gpus(o);
  MultiTranscodeReport multi;
  multi.streams.resize(static_cast<std::size_t>(n));
  multi.failures.resize(static_cast<std::size_t>(n));
  multi.gpus = gpus.place(n);
  std::vector<std::atomic<std::int64_t>> done(static_cast<std::size_t>(n));
  const auto t0 = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int k = 0; k < n; ++k) {
      threads.emplace_back([&, k] {
        const auto i = static_cast<std::size_t>(k);
        TranscodeOptions mine = o;
        mine.output = outputs[i];
        mine.streams = 1;
        RunHooks own = hooks;
        own.stream_label = std::to_string(k + 1);
        own.on_progress = nullptr;
        if (hooks.on_progress)  // the first stream reports the sum of all
          own.on_progress = [&, i](const TranscodeProgress& p) {
            done[i] = p.frames_done;
            if (i != 0) return;
            TranscodeProgress sum = p;
            sum.frames_done = 0;
            for (const auto& d : done) sum.frames_done += d.load();
            sum.frames_total = p.frames_total > 0 ? p.frames_total * n : 0;
            hooks.on_progress(sum);
          };
        multi.failures[i] = run_stream(mine, std::move(own), gpus, multi.gpus[i], multi.streams[i]);
      });
    }
  }
  multi.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return multi;
}

}  // namespace vpipe
