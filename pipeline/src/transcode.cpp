#include "vpipe/pipeline/transcode.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <thread>

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/cuda_stages.hpp"
#include "vpipe/pipeline/hw_probe.hpp"
#include "vpipe/pipeline/media_stages.hpp"
#include "vpipe/pipeline/host_frames.hpp"
#include "vpipe/pipeline/nvdec.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {

struct OutputFile {
  UniqueMuxContext ctx;
  std::string path;
  bool created = false;
  bool keep = false;
  ~OutputFile() {
    ctx.reset();  // closes the file
    if (created && !keep) {
      std::error_code ec;
      fs::remove(path, ec);
    }
  }
};

// NVDEC frames hold decode surfaces (32 at most, the DPB's among them): the
// queue after an NVDEC decoder is kept short enough that they never run out.
std::size_t nvdec_queue_depth(const TranscodeOptions& o) { return std::min<std::size_t>(o.queue_depth, 8); }

UniqueAVCodecContext open_decoder(AVStream* stream, const TranscodeOptions& o,
                                  NvdecContext* nvdec = nullptr, HostFramePool* host_pool = nullptr) {
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
  if (nvdec) nvdec->attach(dec.get(), static_cast<int>(nvdec_queue_depth(o)) + 3);
  if (host_pool) host_pool->attach(dec.get());
  if (const int ret = avcodec_open2(dec.get(), codec, nullptr); ret < 0)
    throw input_error(fmt::format("{}: cannot open the {} decoder: {}", o.input, codec->name,
                                  av_error_text(ret)));
  return dec;
}

// The first of the encoder's formats, yuv420p preferred; or `want` if taken.
AVPixelFormat encoder_format(const AVCodec* codec, AVPixelFormat want) {
  if (!codec->pix_fmts) return want;
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == want) return want;
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == AV_PIX_FMT_YUV420P) return *p;
  return codec->pix_fmts[0];
}

}  // namespace

UniqueAVCodecContext open_video_encoder(const AVCodec* codec, const FrameFormat& format,
                                        AVRational time_base, AVRational frame_rate,
                                        bool global_header, const TranscodeOptions& o,
                                        const AVCodecContext* props) {
  UniqueAVCodecContext enc(avcodec_alloc_context3(codec));
  enc->width = format.width;
  enc->height = format.height;
  enc->pix_fmt = format.pix_fmt;
  enc->time_base = time_base;
  enc->framerate = frame_rate;
  if (enc->time_base.den > 65535 && codec->id == AV_CODEC_ID_MPEG4 && enc->framerate.num > 0)
    enc->time_base = av_inv_q(enc->framerate);  // MPEG-4 part 2 limits the time base
  if (props) {
    if (format.width == props->width && format.height == props->height)
      enc->sample_aspect_ratio = props->sample_aspect_ratio;
    enc->color_range = props->color_range;
    enc->colorspace = props->colorspace;
    enc->color_primaries = props->color_primaries;
    enc->color_trc = props->color_trc;
  }
  enc->thread_count = 0;
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
  } else if (codec->id == AV_CODEC_ID_MPEG4) {
    enc->flags |= AV_CODEC_FLAG_QSCALE;
    enc->global_quality = FF_QP2LAMBDA * o.qscale;
  }
  const int ret = avcodec_open2(enc.get(), codec, &enc_opts);
  av_dict_free(&enc_opts);
  if (ret < 0)
    throw input_error(fmt::format("cannot open encoder {} for {}: {}", codec->name,
                                  to_string(format), av_error_text(ret)));
  return enc;
}

nlohmann::json TranscodeReport::to_json() const {
  using nlohmann::json;
  auto fmt_json = [](const FrameFormat& f) {
    const char* n = av_get_pix_fmt_name(f.pix_fmt);
    return json{{"width", f.width}, {"height", f.height}, {"pix_fmt", n ? n : "none"}};
  };
  json stages_j = json::array();
  for (const auto& s : stages)
    stages_j.push_back({{"name", s.name}, {"items_in", s.items_in}, {"items_out", s.items_out},
                        {"busy_s", s.busy_s}, {"busy_ms_per_item",
                         s.items_in ? 1e3 * s.busy_s / static_cast<double>(s.items_in) : 0.0},
                        {"latency_ms", {{"p50", s.item_ms_p50}, {"p99", s.item_ms_p99},
                                        {"max", s.item_ms_max}}}});
  json queues_j = json::array();
  for (const auto& q : queues)
    queues_j.push_back({{"name", q.name}, {"capacity", q.capacity}, {"high_water", q.high_water},
                        {"pushed", q.pushed}, {"producer_blocked_s", q.producer_blocked_s},
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
          {"frames", {{"packets_read", packets_read},
                      {"decoded", frames_decoded},
                      {"encoded", frames_encoded},
                      {"video_packets_written", video_packets_written},
                      {"other_packets_written", other_packets_written},
                      {"decode_errors", decode_errors},
                      {"fitted_to_encoder", frames_fitted},
                      {"timestamp_discontinuities", ts_discontinuities},
                      {"dropped", frames_dropped}}},
          {"live", live},
          {"drop_policy", drop},
          {"stalls", stalls},
          {"reconnects", reconnects},
          {"copied_streams", copied_streams},
          {"wall_s", wall_s},
          {"fps", fps},
          {"latency_ms", {{"p50", latency_ms_p50}, {"p90", latency_ms_p90},
                          {"p99", latency_ms_p99}, {"max", latency_ms_max}}},
          {"glass_to_glass_ms", glass},
          {"in_flight", in_flight},
          {"interrupted", interrupted},
          {"status", !failure.empty() ? "failed: " + failure
                     : decode_errors ? fmt::format("completed with {} errors", decode_errors)
                                     : std::string(interrupted ? "interrupted" : "ok")},
          {"stages", stages_j},
          {"memory", memory},
          {"queues", queues_j},
          {"notes", notes}};
}

TranscodeReport transcode(const TranscodeOptions& o) {
  TranscodeReport report;
  report.input = o.input;
  report.output = o.output;
  report.filters = o.filters;
  const bool null_output = o.output == "null";

  // Device: the CUDA path where asked for (or, with auto, where usable).
  if (o.device != "cpu" && o.device != "auto" && o.device != "cuda")
    throw input_error(fmt::format("--device {}: expected cpu, cuda or auto", o.device));
  if (o.decode != "cpu" && o.decode != "auto" && o.decode != "nvdec")
    throw input_error(fmt::format("--decode {}: expected cpu, nvdec or auto", o.decode));
  if (o.host != "pinned" && o.host != "pageable")
    throw input_error(fmt::format("--host {}: expected pinned or pageable", o.host));
  if (std::find(strategy_names().begin(), strategy_names().end(), o.mem) == strategy_names().end())
    throw input_error(fmt::format("--mem {}: expected one of naive, pool, pool-release0, vmm, slab",
                                  o.mem));
  if (o.loop < 1) throw input_error(fmt::format("--loop {}: expected 1 or more", o.loop));
  if (o.drop != "auto" && o.drop != "block" && o.drop != "drop-oldest" && o.drop != "drop-newest")
    throw input_error(fmt::format("--drop {}: expected auto, block, drop-oldest or drop-newest", o.drop));
  if (!(o.stall_timeout_s > 0))
    throw input_error(fmt::format("--stall-timeout {}: expected seconds > 0", o.stall_timeout_s));
  if (o.reconnect < 0) throw input_error(fmt::format("--reconnect {}: expected 0 or more", o.reconnect));
  report.live = is_live_input(o.input);
  report.drop = o.drop != "auto" ? o.drop : report.live ? "drop-newest" : "block";
  const DropPolicy drop = report.drop == "drop-oldest"   ? DropPolicy::kDropOldest
                          : report.drop == "drop-newest" ? DropPolicy::kDropNewest
                                                         : DropPolicy::kBlock;
  InputOpenOptions open_options;
  for (const auto& kv : o.input_options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw input_error(fmt::format("--input-option {}: expected key=value", kv));
    open_options.extra.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (o.decode == "nvdec" && o.device == "cpu")
    throw input_error("--decode nvdec needs the CUDA path: drop --device cpu");
  const auto cuda_reason = o.device == "cpu" ? std::string() : cuda_unavailable_reason();
  if ((o.device == "cuda" || o.decode == "nvdec") && !cuda_reason.empty())
    throw input_error(fmt::format("--{} {}: {}", o.device == "cuda" ? "device" : "decode",
                                  o.device == "cuda" ? "cuda" : "nvdec", cuda_reason));
  report.device = o.device != "cpu" && cuda_reason.empty() ? "cuda" : "cpu";
  if (o.device == "auto")
    report.notes.push_back(report.device == "cuda"
                               ? std::string("device auto: CUDA path")
                               : fmt::format("device auto: CPU path ({})", cuda_reason));

  // Parse the chain before touching any file: a typo must not cost a decode.
  const auto specs = parse_chain(o.filters);
  for (const auto& s : specs) (void)parse_params(FilterRegistry::instance().info(s.name), s.args);

  if (o.input.empty() || o.output.empty()) throw input_error("need an input and an output path");
  {
    std::error_code ec;
    if (!null_output && fs::exists(o.output, ec) && fs::exists(o.input, ec) &&
        fs::equivalent(o.input, o.output, ec))
      throw input_error(fmt::format("{}: the output would overwrite the input", o.output));
    if (fs::exists(o.input, ec) && fs::is_regular_file(o.input, ec) && fs::file_size(o.input, ec) == 0)
      throw input_error(fmt::format("cannot open input '{}': the file is empty", o.input));
  }

  // ---- input (a live one watched for stalls and Ctrl-C from the start)
  InputWatch watch(o.stall_timeout_s, o.interrupt);
  if (report.live) {
    open_options.watch = &watch;
    open_options.low_latency = true;
    report.notes.push_back(fmt::format(
        "live input: low-latency open, --drop {}, stall timeout {} s, {}", report.drop,
        o.stall_timeout_s,
        can_reconnect(o.input) ? fmt::format("up to {} reconnect(s)", o.reconnect)
                               : std::string("no connection to reopen (it waits for data)")));
  }
  UniqueDemuxContext in;
  try {
    in = open_input(o.input, open_options);
  } catch (const ffmpeg_error& e) {
    throw input_error(e.what());
  }
  const int vindex = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (vindex < 0) throw input_error(fmt::format("{}: no video stream", o.input));
  AVStream* vin = in->streams[vindex];
  UniqueAVCodecContext dec = open_decoder(vin, o);
  const FrameFormat cpu_format{dec->pix_fmt, dec->width, dec->height};
  if (cpu_format.pix_fmt == AV_PIX_FMT_NONE || dec->width <= 0)
    throw input_error(fmt::format("{}: cannot tell the video's size and pixel format", o.input));

  // ---- decoder: NVDEC where asked for, or with auto where the frames go
  // straight to a CUDA filter (or nowhere: a decode-only run).
  bool use_nvdec = false;
  if (o.decode != "cpu" && report.device == "cuda") {
    const std::string why = nvdec_unsupported_reason(vin->codecpar);
    if (o.decode == "nvdec" && !why.empty())
      throw input_error(fmt::format("--decode nvdec: {}: {}", o.input, why));
    use_nvdec = why.empty();
    if (!why.empty()) report.notes.push_back(fmt::format("decode auto: CPU ({})", why));
  }
  const FrameFormat nvdec_format{AV_PIX_FMT_NV12, dec->width, dec->height};
  auto chain = build_chain(specs, use_nvdec ? nvdec_format : cpu_format);
  if (use_nvdec && o.decode == "auto") {
    // NVDEC's frames suit a chain whose CUDA filters come first, unbroken by
    // a CPU filter (a format conversion inserted for NV12 would be one).
    // (Filters that pass frames through for this input do not count.)
    std::vector<bool> gpu;
    const auto on_cuda = cuda_steps(chain);
    for (std::size_t i = 0; i < chain.size(); ++i)
      if (!chain[i].filter->is_identity()) gpu.push_back(on_cuda[i]);
    bool starts_on_gpu = gpu.empty() ? null_output && chain.empty() : gpu.front();
    for (std::size_t i = 1; i < gpu.size(); ++i)
      if (gpu[i] && !gpu[i - 1]) starts_on_gpu = false;
    if (!starts_on_gpu) {
      use_nvdec = false;
      report.notes.push_back(chain.empty()
                                 ? "decode auto: CPU (no CUDA filter to take NVDEC's frames)"
                                 : "decode auto: CPU (the chain does not start with its CUDA "
                                   "filters in NV12)");
      chain = build_chain(specs, cpu_format);
    }
  }
  report.decode = use_nvdec ? "nvdec" : "cpu";
  report.input_format = use_nvdec ? nvdec_format : cpu_format;

  // ---- encoder
  const AVCodec* codec = nullptr;
  if (!null_output) {
    std::string name = o.encoder;
    if (name == "auto") {
      name = "libx264";
      if (report.device == "cuda") {
        const NvencProbe nvenc = probe_nvenc();
        if (nvenc.usable) name = "h264_nvenc";
        report.notes.push_back(nvenc.usable
                                   ? std::string("encoder auto: h264_nvenc (NVENC present)")
                                   : fmt::format("encoder auto: libx264, this device has no usable "
                                                 "NVENC ({})", nvenc.detail));
      }
    }
    codec = avcodec_find_encoder_by_name(name.c_str());
    if (!codec || codec->type != AVMEDIA_TYPE_VIDEO)
      throw input_error(fmt::format("--encoder {}: no such video encoder in this FFmpeg build", name));
    report.encoder = codec->name;
  } else {
    report.encoder = "none (null output)";
  }
  FrameFormat out_fmt = chain.empty() ? report.input_format : chain.back().out;
  if (codec) {
    if (const auto want = encoder_format(codec, out_fmt.pix_fmt); want != out_fmt.pix_fmt) {
      auto conv = build_chain(parse_chain(fmt::format("format={}", av_get_pix_fmt_name(want))), out_fmt);
      for (auto& c : conv) chain.push_back(std::move(c));
      out_fmt = chain.back().out;
    }
  }
  for (const auto& c : chain) report.effective_chain.push_back(c.label);
  report.output_format = out_fmt;

  // ---- output
  OutputFile out;
  out.path = o.output;
  out.keep = o.keep_partial;
  AVFormatContext* oc = nullptr;
  // Declared before the encoder so that they outlive it: a frame the download
  // stage emits is a ring slot, and the encoder can still hold one when the
  // run stops early (its packet not taken because the pipeline failed); the
  // slot goes back when avcodec_free_context drops it. Seen on the H200: an
  // out-of-memory run aborted in that release, the ring already destroyed.
  std::vector<std::unique_ptr<PinnedRing>> rings;  // upload first, download last
  UniqueAVCodecContext enc;
  std::vector<int> output_index(in->nb_streams, -1);
  std::vector<AVRational> source_tb;
  AVStream* vout = nullptr;
  const AVRational frame_rate = av_guess_frame_rate(in.get(), vin, nullptr);
  if (!null_output) {
    {
      AVFormatContext* raw = nullptr;
      const std::string net = network_output_format(o.output);
      if (avformat_alloc_output_context2(&raw, nullptr, net.empty() ? nullptr : net.c_str(),
                                         o.output.c_str()) < 0 || !raw)
        throw input_error(fmt::format("{}: cannot tell the container from the name (use .mp4, "
                                      ".mkv, .mov, .ts…, udp://host:port for MPEG-TS over UDP, "
                                      "or null to write nothing)", o.output));
      out.ctx.reset(raw);
    }
    oc = out.ctx.get();
    // A live run has no natural end: an MP4/MOV being written is fragmented,
    // so the file is playable at any moment, even if the process is killed.
    // (Not empty_moov: the moov would be written before the ADTS→ASC filter
    // has seen MPEG-TS's AAC, and the muxer refuses it.)
    const std::string oname = oc->oformat->name;
    if (report.live && (oname == "mp4" || oname == "mov")) {
      av_opt_set(oc->priv_data, "movflags", "frag_keyframe+default_base_moof", 0);
      report.notes.push_back("live input: the MP4 is written fragmented (playable while written)");
    }
    enc = open_video_encoder(codec, out_fmt, vin->time_base, frame_rate,
                             (oc->oformat->flags & AVFMT_GLOBALHEADER) != 0, o, dec.get());

    // Streams: video first, then every stream the container can take, copied.
    vout = avformat_new_stream(oc, nullptr);
    av_check(avcodec_parameters_from_context(vout->codecpar, enc.get()), "output video parameters");
    vout->time_base = enc->time_base;
    vout->avg_frame_rate = enc->framerate;
    source_tb.push_back(enc->time_base);
    for (unsigned i = 0; i < in->nb_streams; ++i) {
      AVStream* s = in->streams[i];
      if (static_cast<int>(i) == vindex) continue;
      const auto type = s->codecpar->codec_type;
      if (type != AVMEDIA_TYPE_AUDIO && type != AVMEDIA_TYPE_SUBTITLE) continue;
      if (avformat_query_codec(oc->oformat, s->codecpar->codec_id, FF_COMPLIANCE_NORMAL) != 1) {
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
    av_dict_copy(&oc->metadata, in->metadata, 0);

    if (!(oc->oformat->flags & AVFMT_NOFILE)) {
      if (const int ret = avio_open(&oc->pb, o.output.c_str(), AVIO_FLAG_WRITE); ret < 0)
        throw input_error(fmt::format("cannot open output '{}': {}", o.output, av_error_text(ret)));
      out.created = true;
    }
    if (const int ret = avformat_write_header(oc, nullptr); ret < 0)
      throw input_error(fmt::format("cannot write '{}': {}", o.output, av_error_text(ret)));
  }

  // ---- the CUDA path's parts: the chain splits into CPU filters before the
  // upload (format conversion), CUDA filters, and CPU filters after the download.
  std::size_t first_cuda = chain.size(), last_cuda = 0;
  const auto on_cuda = cuda_steps(chain);
  for (std::size_t i = 0; i < chain.size(); ++i)
    if (on_cuda[i]) {
      first_cuda = std::min(first_cuda, i);
      last_cuda = i;
    }
  const bool cuda_filters = report.device == "cuda" && first_cuda < chain.size();
  if (report.device == "cuda" && !cuda_filters &&
      std::any_of(chain.begin(), chain.end(), [](const auto& c) { return !c.filter->is_identity(); }))
    report.notes.push_back("no CUDA filter in this chain: it runs on the CPU");
  if (cuda_filters)
    for (std::size_t i = first_cuda; i <= last_cuda; ++i)
      if (!on_cuda[i] && !chain[i].filter->is_identity())
        throw input_error(fmt::format("--vf: '{}' has no CUDA implementation and sits between CUDA "
                                      "filters; use --device cpu", chain[i].label));
  std::optional<MemoryStrategy> own_strategy;
  MemoryStrategy* strategy = nullptr;
  PinnedRing* upload_ring = nullptr;
  PinnedRing* download_ring = nullptr;
  StreamSet streams;
  std::unique_ptr<NvdecContext> nvdec;
  std::unique_ptr<HostFramePool> host_pool;  // CPU decode straight into pinned memory
  UploadStage* upload_stage = nullptr;
  const auto host_kind = o.host == "pinned" ? HostMemory::kPinned : HostMemory::kPageable;
  std::unique_ptr<RetryAdaptor> retry;  // out of memory: trim, retry, then fail
  if (cuda_filters || use_nvdec) {
    if (o.shared_memory) {
      strategy = o.shared_memory;
    } else {
      StrategyOptions so;
      so.budget = o.budget;
      own_strategy.emplace(make_strategy(o.mem, so));
      strategy = &*own_strategy;
    }
    retry = std::make_unique<RetryAdaptor>(strategy->resource(), strategy->strategy());
  }
  if (use_nvdec) {
    try {
      nvdec = std::make_unique<NvdecContext>(*retry, streams.make());
    } catch (const std::exception& e) {
      throw input_error(fmt::format("--decode {}: {}", o.decode, e.what()));
    }
    dec = open_decoder(vin, o, nvdec.get());
  } else if (cuda_filters && first_cuda == 0 && o.host == "pinned") {
    host_pool = std::make_unique<HostFramePool>(HostMemory::kPinned);
    dec = open_decoder(vin, o, nullptr, host_pool.get());
  }

  // ---- the pipeline
  MediaCounters counters;
  std::optional<FlightLimit> flight;  // outlives the pipeline: frames hold its tickets
  if (o.max_in_flight > 0) flight.emplace(o.max_in_flight, drop != DropPolicy::kBlock);
  Pipeline pipeline;
  const auto depth = o.queue_depth;
  // Frame queues take the --drop policy; packet queues always block (a
  // dropped packet would break decoding).
  auto frame_queue = [&](std::string name, std::size_t capacity) {
    auto q = pipeline.make_queue<Frame>(std::move(name), capacity);
    q->set_policy(drop);
    return q;
  };
  auto packets = pipeline.make_queue<Packet>("demux→decode", depth * 2);
  auto mux_in = pipeline.make_queue<Packet>("→mux", depth * 8);
  auto demux = std::make_unique<DemuxSource>(in.get(), o.input, vindex, output_index, mux_in,
                                             counters, o.realtime);
  demux->loop(o.loop);
  if (report.live) {
    demux->watch(&watch);
    if (can_reconnect(o.input) && o.reconnect > 0)
      demux->reconnect(o.reconnect, [&o, &open_options] { return open_input(o.input, open_options); });
  }
  if (o.max_frames && frame_rate.num > 0) {
    const double start = vin->start_time != AV_NOPTS_VALUE
                             ? static_cast<double>(vin->start_time) * av_q2d(vin->time_base)
                             : 0.0;
    demux->copy_until(start + static_cast<double>(*o.max_frames) / av_q2d(frame_rate));
  }
  pipeline.add_source<Packet>(std::move(demux), packets);
  auto frames = frame_queue("decode→", use_nvdec ? nvdec_queue_depth(o) : depth);
  {
    auto decode = std::make_unique<DecodeStage>(std::move(dec), vin->time_base, o.max_frames,
                                                counters, nvdec.get());
    if (flight) decode->limit_in_flight(&*flight);
    pipeline.add_stage<Packet, Frame>(std::move(decode), packets, frames);
  }
  bool on_device = use_nvdec;
  auto download = [&](const FrameFormat& format) {
    // The slots are the encoder's input frames: enough for the queue after
    // the download, the encoder's hands and the download in progress.
    rings.push_back(std::make_unique<PinnedRing>(o.queue_depth + 3, staged_bytes(format), host_kind));
    download_ring = rings.back().get();
    auto down = frame_queue("download→", depth);
    pipeline.add_stage<Frame, Frame>(
        std::make_unique<DownloadStage>(*download_ring, streams.make(), o.download_copy), frames, down);
    frames = down;
    on_device = false;
  };
  for (std::size_t i = 0; i < chain.size(); ++i) {
    auto& c = chain[i];
    const bool here_on_gpu = cuda_filters && i >= first_cuda && i <= last_cuda;
    if (here_on_gpu && !on_device) {
      rings.insert(rings.begin(),
                   std::make_unique<PinnedRing>(o.queue_depth + 2, packed_bytes(c.in), host_kind));
      upload_ring = rings.front().get();
      auto up = frame_queue("upload→", depth);
      auto stage = std::make_unique<UploadStage>(*retry, *upload_ring, streams.make());
      upload_stage = stage.get();
      pipeline.add_stage<Frame, Frame>(std::move(stage), frames, up);
      frames = up;
      on_device = true;
    }
    if (!here_on_gpu && on_device) download(c.in);
    auto next = frame_queue(fmt::format("{}→", c.label), depth);
    if (here_on_gpu)
      pipeline.add_stage<Frame, Frame>(
          std::make_unique<CudaFilterStage>(std::move(c), *retry, streams.make()),
          frames, next);
    else
      pipeline.add_stage<Frame, Frame>(std::make_unique<FilterStage>(std::move(c)), frames, next);
    frames = next;
  }
  // Frames end in host memory, where an encoder takes them; a decode-only
  // null run (no filter) leaves NVDEC's frames on the device.
  if (on_device && !(null_output && chain.empty())) download(out_fmt);
  if (null_output) {
    auto sink = std::make_unique<NullSink>(counters, o.on_frame);
    sink->read_stamps(o.read_stamps);
    pipeline.add_sink<Frame>(std::move(sink), frames);
  } else {
    auto encode = std::make_unique<EncodeStage>(enc.get(), vout->index, counters);
    encode->read_stamps(o.read_stamps);
    pipeline.add_stage<Frame, Packet>(std::move(encode), frames, mux_in);
    pipeline.add_sink<Packet>(
        std::make_unique<MuxSink>(oc, o.output, source_tb, vout->index, counters), mux_in);
  }

  // Expected frame count, for progress.
  std::int64_t total = vin->nb_frames;
  if (total <= 0 && in->duration > 0 && frame_rate.num > 0)
    total = static_cast<std::int64_t>(static_cast<double>(in->duration) / AV_TIME_BASE *
                                      av_q2d(frame_rate));
  total *= o.loop;
  if (o.max_frames && (total <= 0 || *o.max_frames < total)) total = *o.max_frames;

  const auto t0 = Clock::now();
  std::atomic<bool> done{false};
  std::jthread monitor([&] {
    auto next_progress = Clock::now();
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (o.interrupt && o.interrupt->load() && !pipeline.stop_requested()) {
        pipeline.request_stop();
        report.interrupted = true;
      }
      if (o.on_progress && Clock::now() >= next_progress) {
        next_progress += std::chrono::milliseconds(250);
        o.on_progress({counters.video_packets_written.load(), total,
                       std::chrono::duration<double>(Clock::now() - t0).count()});
      }
    }
  });
  std::string failure;
  try {
    pipeline.run();
  } catch (const std::exception& e) {
    failure = e.what();  // reported below, then thrown with the report
  }
  done = true;
  monitor.join();
  report.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (o.on_progress) o.on_progress({counters.video_packets_written.load(), total, report.wall_s});

  report.packets_read = counters.packets_read;
  report.frames_decoded = counters.frames_decoded;
  report.frames_encoded = counters.frames_encoded;
  report.video_packets_written = counters.video_packets_written;
  report.other_packets_written = counters.other_packets_written;
  report.decode_errors = counters.decode_errors;
  report.frames_fitted = counters.frames_fitted;
  report.ts_discontinuities = counters.ts_discontinuities;
  report.stalls = counters.stalls;
  if (o.read_stamps) {
    report.glass = {{"frames_with_stamp", counters.stamps_read.load()},
                    {"frames_without", counters.stamps_missing.load()},
                    {"p50", static_cast<double>(counters.glass_ns.percentile(0.50)) * 1e-6},
                    {"p99", static_cast<double>(counters.glass_ns.percentile(0.99)) * 1e-6},
                    {"max", static_cast<double>(counters.glass_ns.max()) * 1e-6},
                    {"steady", {{"note", "frames read 2 s or more after the first stamp"},
                                {"frames", counters.glass_steady_ns.count()},
                                {"p50", static_cast<double>(counters.glass_steady_ns.percentile(0.50)) * 1e-6},
                                {"p99", static_cast<double>(counters.glass_steady_ns.percentile(0.99)) * 1e-6},
                                {"max", static_cast<double>(counters.glass_steady_ns.max()) * 1e-6}}}};
    if (counters.stamps_read == 0)
      report.notes.push_back("--read-stamps: no frame carried a stamp (send with --vf stamp,…)");
  }
  report.reconnects = counters.reconnects;
  report.fps = report.wall_s > 0 ? static_cast<double>(report.video_packets_written) / report.wall_s : 0;
  report.latency_ms_p50 = static_cast<double>(counters.latency_ns.percentile(0.50)) * 1e-6;
  report.latency_ms_p90 = static_cast<double>(counters.latency_ns.percentile(0.90)) * 1e-6;
  report.latency_ms_p99 = static_cast<double>(counters.latency_ns.percentile(0.99)) * 1e-6;
  report.latency_ms_max = static_cast<double>(counters.latency_ns.max()) * 1e-6;
  report.stages = pipeline.stage_stats();
  report.queues = pipeline.queue_stats();
  for (const auto& q : report.queues) report.frames_dropped += static_cast<std::int64_t>(q.dropped);
  if (flight) {
    report.frames_dropped += flight->dropped();
    report.in_flight = {{"limit", flight->limit()}, {"high_water", flight->high_water()},
                        {"dropped_at_limit", flight->dropped()}, {"decoder_waited_s", flight->waited_s()}};
  }
  if (strategy) {
    const auto st = strategy->stats().stats();
    const auto& lat = strategy->stats().allocate_latency();
    const auto usage = strategy->strategy().usage();
    std::size_t pinned = 0;
    for (const auto& r : rings) pinned += r->pinned_bytes();
    if (host_pool) pinned += static_cast<std::size_t>(host_pool->bytes());
    report.memory = {
        {"strategy", o.mem},
        {"allocations", st.count.total},
        {"bytes_peak", st.bytes.peak},
        {"bytes_total", st.bytes.total},
        {"failures", st.failures},
        {"retries", retry->retries()},
        {"failures_after_retry", retry->failures()},
        {"budget_bytes", o.budget ? nlohmann::json(*o.budget) : nlohmann::json()},
        {"device_syncs", st.device_syncs},
        {"allocate_us", {{"p50", static_cast<double>(lat.percentile(0.5)) / 1e3},
                         {"p99", static_cast<double>(lat.percentile(0.99)) / 1e3},
                         {"max", static_cast<double>(lat.max()) / 1e3}}},
        {"reserved_bytes", usage.reserved ? nlohmann::json(*usage.reserved) : nlohmann::json()},
        {"host_staging", o.host},
        {"download", o.download_copy ? "copied out of the slot" : "slot is the encoder's frame"},
        {"pinned_bytes", pinned}};
    auto ring_json = [](const PinnedRing& r) {
      const auto s = r.stats();
      return nlohmann::json{{"slots", r.slot_count()}, {"acquires", s.acquires},
                            {"waits", s.waits}, {"waited_s", s.waited_s}};
    };
    if (upload_ring) report.memory["upload_ring"] = ring_json(*upload_ring);
    if (upload_stage)
      report.memory["upload"] = {{"direct_from_decoder", upload_stage->direct()},
                                 {"unstaged", upload_stage->unstaged()}};
    if (host_pool)
      report.memory["decoded_into_pinned"] = {{"frames", host_pool->frames()},
                                              {"buffers", host_pool->buffers()},
                                              {"bytes", host_pool->bytes()}};
    if (download_ring) report.memory["download_ring"] = ring_json(*download_ring);
    if (nvdec)
      report.memory["nvdec_pool"] = {{"buffers", nvdec->pool_buffers()},
                                     {"bytes", nvdec->pool_bytes()},
                                     {"decode_surfaces", nvdec->decode_surfaces()}};
  }
  if (!failure.empty()) {
    report.failure = failure;
    throw transcode_failed(failure, std::move(report));  // the partial output goes (unless --keep-partial)
  }
  if (counters.disconnects > 0)
    report.notes.push_back("the live input ended with a read error (the sender closed the connection)");
  if (report.stalls > 0)
    report.notes.push_back(fmt::format("the input stalled {} time(s) (no data for {} s){}",
                                       report.stalls, o.stall_timeout_s,
                                       report.reconnects ? fmt::format("; reconnected {} time(s)",
                                                                       report.reconnects)
                                                         : std::string()));
  if (report.frames_decoded == 0)
    throw input_error(fmt::format("{}: no video frame could be decoded", o.input));
  out.keep = true;
  return report;
}

std::string stream_output_name(const std::string& output, int k) {
  if (output == "null") return output;
  if (output.find("://") != std::string::npos)
    throw input_error(fmt::format("--streams: {} is a URL; give a file name (each stream writes "
                                  "its own, with -1, -2… added) or null", output));
  const fs::path p(output);
  return (p.parent_path() / fmt::format("{}-{}{}", p.stem().string(), k, p.extension().string()))
      .string();
}

nlohmann::json MultiTranscodeReport::to_json() const {
  nlohmann::json per = nlohmann::json::array();
  std::int64_t frames = 0, dropped = 0;
  double p99_max = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    auto j = streams[i].to_json();
    if (!failures[i].empty()) j["status"] = "failed: " + failures[i];
    per.push_back(std::move(j));
    frames += streams[i].video_packets_written;
    dropped += streams[i].frames_dropped;
    p99_max = std::max(p99_max, streams[i].latency_ms_p99);
  }
  const auto failed = std::count_if(failures.begin(), failures.end(), [](const auto& f) { return !f.empty(); });
  return {{"streams", per},
          {"aggregate", {{"streams", streams.size()},
                         {"failed", failed},
                         {"frames_written", frames},
                         {"frames_dropped", dropped},
                         {"wall_s", wall_s},
                         {"fps_total", wall_s > 0 ? static_cast<double>(frames) / wall_s : 0.0},
                         {"latency_ms_p99_worst_stream", p99_max}}}};
}

MultiTranscodeReport transcode_streams(const TranscodeOptions& o, int n) {
  if (n < 1) throw input_error(fmt::format("--streams {}: expected 1 or more", n));
  std::vector<std::string> outputs;
  for (int k = 1; k <= n; ++k) outputs.push_back(n == 1 ? o.output : stream_output_name(o.output, k));
  // One strategy for every stream, when they will run on the device.
  std::optional<MemoryStrategy> shared;
  if (o.device != "cpu" && cuda_unavailable_reason().empty()) {
    StrategyOptions so;
    so.budget = o.budget;
    shared.emplace(make_strategy(o.mem, so));
  }
  MultiTranscodeReport multi;
  multi.streams.resize(static_cast<std::size_t>(n));
  multi.failures.resize(static_cast<std::size_t>(n));
  std::vector<std::atomic<std::int64_t>> done(static_cast<std::size_t>(n));
  const auto t0 = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int k = 0; k < n; ++k) {
      threads.emplace_back([&, k] {
        const auto i = static_cast<std::size_t>(k);
        TranscodeOptions mine = o;
        mine.output = outputs[i];
        if (shared) mine.shared_memory = &*shared;
        mine.on_progress = nullptr;
        if (o.on_progress)  // the first stream reports the sum of all
          mine.on_progress = [&, i](const TranscodeProgress& p) {
            done[i] = p.frames_done;
            if (i != 0) return;
            TranscodeProgress sum = p;
            sum.frames_done = 0;
            for (const auto& d : done) sum.frames_done += d.load();
            sum.frames_total = p.frames_total > 0 ? p.frames_total * n : 0;
            o.on_progress(sum);
          };
        try {
          multi.streams[i] = transcode(mine);
        } catch (const transcode_failed& e) {
          multi.streams[i] = e.report;
          multi.failures[i] = e.what();
        } catch (const std::exception& e) {
          multi.streams[i].input = o.input;
          multi.streams[i].output = mine.output;
          multi.failures[i] = e.what();
        }
      });
    }
  }
  multi.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return multi;
}

}  // namespace vpipe
