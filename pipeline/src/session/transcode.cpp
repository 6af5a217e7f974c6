#include "vpipe/pipeline/session/transcode.hpp"
#include "vpipe/pipeline/parallel/gpu_placement.hpp"
#include "vpipe/pipeline/session/stream_copy.hpp"

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

#include "transcode_output.hpp"
#include "transcode_parts.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/filters/cuda_stages.hpp"
#include "vpipe/pipeline/graph/fan_out.hpp"
#include "vpipe/pipeline/graph/host_frames.hpp"
#include "vpipe/pipeline/io/dash.hpp"
#include "vpipe/pipeline/io/demux.hpp"
#include "vpipe/pipeline/io/first_frame.hpp"
#include "vpipe/pipeline/io/hls.hpp"
#include "vpipe/pipeline/io/hw_probe.hpp"
#include "vpipe/pipeline/io/ladder_folder.hpp"
#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"
#include "vpipe/pipeline/io/nvml_load.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/parallel/segment_decode.hpp"
#include "vpipe/pipeline/parallel/segment_encode.hpp"
#include "vpipe/pipeline/session/frame_graph.hpp"
#include "vpipe/pipeline/session/live_stats.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/transcode_files.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {

// Up to three segments per session wait in device memory (copied out of
// NVDEC's surfaces): a longer GOP → one session, so they stay bounded.
constexpr std::size_t kNvdecSegment = 120;

}  // namespace

namespace {

// What can be checked before any file is opened: a typo must not cost a decode.
void check_paths(const TranscodeOptions& o) {
  std::error_code ec;
  if (fs::exists(o.input, ec) && fs::is_regular_file(o.input, ec) &&
      fs::file_size(o.input, ec) == 0)
    throw input_error(fmt::format("cannot open input '{}': the file is empty", o.input));
  if (const auto dir = fs::path(o.output).parent_path();
      !ladder_dir(o).empty() && !fs::create_directories(dir, ec) && ec)
    throw input_error(
        fmt::format("cannot make the rendition's folder '{}': {}", dir.string(), ec.message()));
  if (const auto local = local_file(o.output); local && o.output != "null")
    check_writable(*local, "output");
  if (o.loop > 1 && !can_read_again(o.input))
    throw usage_error(fmt::format(
        "loop {}: '{}' cannot be read again (a pipe, FIFO or live feed gives one pass); "
        "loop a file",
        o.loop, o.input));
  if ((o.start_frame || o.end_frame) && !can_read_again(o.input))
    throw usage_error(fmt::format(
        "ss_frame, to_frame: '{}' cannot be read again to count its frames (a pipe, FIFO or "
        "live feed gives one pass); cut it by time (ss, to, duration)",
        o.input));
}

// Steps [from, to) of a plan's chain for the stages that run them (the stages own
// the filters; the plan keeps each step's label and formats), and their CUDA
// segment counted from `from`.
std::pair<std::vector<ConfiguredFilter>, std::optional<CudaSegment>> take_steps(TranscodePlan& p,
                                                                                std::size_t from,
                                                                                std::size_t to) {
  std::vector<ConfiguredFilter> steps;
  if (from >= to) return {std::move(steps), std::nullopt};  // no steps: no segment either
  for (std::size_t i = from; i < to; ++i) {
    auto& s = p.chain[i];
    steps.push_back({s.label, std::move(s.filter), s.in, s.out, s.colour});
  }
  std::optional<CudaSegment> cuda;
  if (p.cuda && p.cuda->last >= from && p.cuda->first < to)
    cuda = CudaSegment{std::max(p.cuda->first, from) - from, std::min(p.cuda->last, to - 1) - from};
  return {std::move(steps), cuda};
}

std::string drop_name(DropPolicy d) {
  return std::string(name_of(d == DropPolicy::kDropOldest   ? Drop::kDropOldest
                             : d == DropPolicy::kDropNewest ? Drop::kDropNewest
                                                            : Drop::kBlock));
}

// The run's description in its report, from its options and plan (the first output's).
void describe_run(TranscodeReport& report, const TranscodeOptions& o, const TranscodePlan& plan,
                  std::string output) {
  report.input = o.input;
  report.output = std::move(output);
  report.filters = o.filters;
  if (plan.live)
    report.notes.push_back(fmt::format(
        "live input: low-latency open, drop policy {}, stall timeout {} s, {}",
        drop_name(plan.drop), o.stall_timeout_s,
        can_reconnect(o.input) ? fmt::format("up to {} reconnect(s)", o.reconnect)
                               : std::string("no connection to reopen (it waits for data)")));
  report.device = plan.device == Device::kCuda ? "cuda" : "cpu";
  report.decode = plan.nvdec ? "nvdec" : "cpu";
  report.encoder = plan.encoder ? plan.encoder->name : "none (null output)";
  report.live = plan.live;
  report.drop = drop_name(plan.drop);
  report.input_format = plan.decoded;
  report.output_format = plan.output;
  report.effective_chain = plan.labels();
}

}  // namespace

TranscodeSession::Parts::Parts(TranscodeOptions options, RunHooks run_hooks)
    : o(std::move(options)),
      hooks(std::move(run_hooks)),
      // A file has no stall limit (a slow disk is not a dead feed), but Ctrl-C
      // still ends a wait for it (a FIFO with no writer).
      watch(is_live_input(o.input) ? o.stall_timeout_s : kNoStallLimit, hooks.interrupt) {
  settle_pictures(o);
  // This run's files (of --streams, its own: transcode_streams checked them all together).
  check_files([&] {
    TranscodeOptions mine = o;
    mine.streams = 1;
    return mine;
  }());
  if (const std::string dir = ladder_dir(o); !dir.empty()) {
    ladder.emplace(local_file(dir).value_or(dir), o.keep_partial);  // "file:DIR" is DIR
    (o.hls.empty() ? o.dash : o.hls) = ladder->staging();  // every rendition is written there
  }
  try {
    build();
  } catch (const usage_error& e) {  // a rendition is named where the user will find it
    throw usage_error(ladder ? ladder->in_final_names(e.what()) : e.what());
  } catch (const input_error& e) {
    throw input_error(ladder ? ladder->in_final_names(e.what()) : e.what());
  }
}

// The outputs planned and opened, the CUDA path made, the stages wired.
void TranscodeSession::Parts::build() {
  std::vector<TranscodeOptions> list = output_list(o);
  o = list.front();                            // several outputs: the first's keys applied
  std::vector<std::vector<FilterSpec>> specs;  // parsed once: plan() takes them
  for (auto& each : list) {
    specs.push_back(check_before_opening(each));
    check_paths(each);
    auto& out = *outs.emplace_back(std::make_unique<OutputPart>());
    out.o = std::move(each);
    if (list.size() > 1) {
      out.health = std::make_shared<BranchHealth>();
      out.label = std::to_string(outs.size());
    }
  }
  decode_sessions = o.decode_sessions;
  open_input();
  MachineProbe machine;
  if (o.device != Device::kCpu) machine.cuda_unavailable = cuda_unavailable_reason();
  machine.nvenc = [] {
    const auto n = probe_nvenc();
    return std::pair{n.usable, n.detail};
  };
  plan_outputs(std::move(specs),
               {{decoder->pix_fmt, decoder->width, decoder->height},
                nvdec_unsupported_reason(video->codecpar),
                colour_of_tags(decoder->colorspace, decoder->color_range, decoder->pix_fmt,
                               decoder->chroma_sample_location, decoder->codec_id)},
               machine);
  describe_run(report, o, run_plan(), ladder ? ladder->final_name(o.output) : o.output);
  for (const auto& out : outs)  // each output's plan notes (fit, encoder auto…), named by it
    for (const auto& n : out->plan.notes)
      report.notes.push_back(outs.size() == 1 ? n : shown_name(*out) + ": " + n);
  open_outputs();
  make_cuda_path();
  wire();
}

// Every output decodes the same frames: where one output's plan takes NVDEC (a
// CUDA filter first), the others are planned again with it (their frames then
// start on the device, and come down where they need the host).
void TranscodeSession::Parts::plan_outputs(std::vector<std::vector<FilterSpec>> specs,
                                           const ProbedInput& probed, const MachineProbe& machine) {
  bool nvdec_wanted = false;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    outs[k]->plan = vpipe::plan(outs[k]->o, specs[k], probed, machine);
    nvdec_wanted = nvdec_wanted || outs[k]->plan.nvdec;
  }
  for (std::size_t k = 0; nvdec_wanted && k < outs.size(); ++k) {
    auto& out = *outs[k];
    if (out.plan.nvdec) continue;
    out.o.decode = Decode::kNvdec;
    out.plan = vpipe::plan(out.o, std::move(specs[k]), probed, machine);
    if (!out.plan.nvdec)
      throw usage_error(
          fmt::format("{}: the outputs cannot share one decode (NVDEC for some, "
                      "not for this one); give decode cpu or decode nvdec",
                      out.o.output));
  }
  o.decode = run_plan().nvdec ? Decode::kNvdec : o.decode;
}

// Each output's muxer and encoder; with several, its notes named by its path.
void TranscodeSession::Parts::open_outputs() {
  for (auto& out : outs) {
    if (out->plan.null_output) continue;
    TranscodeReport scratch;
    out->encoder = out->output.open(out->o, out->plan, source(), hooks.interrupt,
                                    outs.size() == 1 ? report : scratch);
    for (const auto& n : scratch.notes) report.notes.push_back(shown_name(*out) + ": " + n);
  }
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
  video_index = video_stream(*input, o.input);
  video = input->streams[video_index];
  frame_rate = av_guess_frame_rate(input.get(), video, nullptr);
  const std::function<UniqueDemuxContext()> open_again = [this] {
    return vpipe::open_input(o.input, open_options);
  };
  if (o.has_cut()) {
    cut = resolve_cut({o.start_s, o.end_s, o.duration_s, o.start_frame, o.end_frame, o.copyts},
                      input.get(), video_index, is_live_input(o.input), open_again);
    report.notes.push_back(cut->describe());
  }
  decoder = open_decoder(video, o);
  // What the streams do not say, from the first frame: a file is read again for it; a pipe gives
  // one pass, so the packets read for it go to the demuxer first; a live feed is not held back.
  if (const bool file = can_read_again(o.input);
      o.output != "null" && (file || !is_live_input(o.input))) {
    FirstFrame first(input.get(), video_index, file ? open_again : nullptr);
    hdr10 = read_hdr10(video, first);
    settle_field_order(video, first);
    first_packets = first.take_read();
  }
  if (decoder->pix_fmt == AV_PIX_FMT_NONE || decoder->width <= 0) {
    const bool mp4_piped = !can_read_again(o.input) &&
                           std::string_view(input->iformat->name).find("mp4") != std::string::npos;
    throw input_error(fmt::format(
        "{}: cannot tell the video's size and pixel format{}", o.input,
        mp4_piped ? " (an MP4 read from a pipe needs its index first: ffmpeg -movflags +faststart)"
                  : ""));
  }
}

// The strategy, its retry gate, NVDEC or the pinned decode pool, each output's graph.
void TranscodeSession::Parts::make_cuda_path() {
  const TranscodePlan& plan = run_plan();
  CudaPath cuda;
  cuda.streams = &streams;
  cuda.host = o.host;
  cuda.download_copy = o.download_copy;
  cuda.graphs = o.graphs;
  const bool device_memory =
      std::ranges::any_of(outs, [](const auto& out) { return out->plan.device_memory; });
  if (device_memory) {
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
    decoder = open_decoder(video, o, nvdec.get(), kNvdecFramesHeldCopying);
    if (o.nvdec_api == NvdecApi::kAuto && nvdec->api() == "cuvid")
      report.notes.push_back(
          fmt::format("decode: nvdec_api auto: cuvid (FFmpeg's {}; one of {} streams); its "
                      "frames carry no closed captions (nvdec_api hwaccel keeps them)",
                      decoder->codec->name, o.streams));
  } else if (plan.decode_into_pinned) {
    host_pool = std::make_unique<HostFramePool>(HostMemory::kPinned);
    decoder = open_decoder(video, o, nullptr, 0, host_pool.get());
  }
  for (auto& out : outs) {
    out->graph.emplace(cuda, plan.drop, plan.queues);
    // --frames N counts the frames a rate change (fps=) sends on, as FFmpeg's -frames:v does
    if (out->plan.rate) out->graph->limit_rate_output(o.max_frames);
  }
}

// --frames N where the chain changes the rate counts its output's frames (the rate stages stop
// there), so the decoder is not held to N; every output then has the one rate, or --frames is
// refused (it would stop each output at another time).
std::optional<std::int64_t> TranscodeSession::Parts::decode_limit() const {
  if (!o.max_frames) return std::nullopt;
  const auto made = run_plan().rate;
  for (const auto& out : outs) {
    const auto rate = out->plan.rate;
    if (rate.has_value() != made.has_value() || (rate && av_cmp_q(*rate, *made) != 0))
      throw usage_error(fmt::format(
          "frames {}: the outputs have different frame rates (an fps= in some chains, not "
          "others); frames counts each output's frames, so it would end them at different "
          "times. Give every output the same fps=, or cut by time (to, duration)",
          *o.max_frames));
  }
  return made ? std::nullopt : o.max_frames;
}

// The rate the outputs' frames have: the chain's (fps=), else the input's.
AVRational TranscodeSession::Parts::output_rate() const {
  return run_plan().rate.value_or(frame_rate);
}

void TranscodeSession::Parts::wire() {
  const TranscodePlan& plan = run_plan();
  if (o.max_in_flight > 0) flight.emplace(o.max_in_flight, plan.drop != DropPolicy::kBlock);
  auto packets = pipeline.make_queue<Packet>("demux→decode", plan.queues.packets);
  auto demux_stage =
      std::make_unique<DemuxSource>(input.get(), o.input, video_index, run_counters(), o.realtime);
  demux = demux_stage.get();
  std::vector<QueuePtr<Packet>> mux_in;
  for (const auto& out : outs) {  // every output gets the copied streams (audio…)
    mux_in.push_back(pipeline.make_queue<Packet>(out->label.empty() ? "→mux" : "→mux " + out->label,
                                                 plan.queues.mux));
    demux_stage->copy_to(out->output.index(), mux_in.back(), out->output.reencoders());
  }
  demux_stage->interrupt(hooks.interrupt);
  if (o.loop > 1)
    demux_stage->loop(o.loop, [this] { return vpipe::open_input(o.input, open_options); });
  if (plan.live) {
    demux_stage->watch(&watch);
    if (can_reconnect(o.input) && o.reconnect > 0)
      demux_stage->reconnect(o.reconnect,
                             [this] { return vpipe::open_input(o.input, open_options); });
  }
  demux_stage->send_first(std::move(first_packets));
  if (cut)
    demux_stage->cut(*cut);
  else if (const double shift = output_clock_shift_s(cut, input.get(), o.copyts); shift != 0)
    demux_stage->start_clock_at(-shift);
  if (const AVRational rate = output_rate(); o.max_frames && rate.num > 0) {  // output's clock
    const double start = cut && cut->start ? *cut->start
                         : video->start_time != AV_NOPTS_VALUE
                             ? static_cast<double>(video->start_time) * av_q2d(video->time_base)
                             : 0.0;
    demux_stage->copy_until(start + output_clock_shift_s(cut, input.get(), o.copyts) +
                            static_cast<double>(*o.max_frames) / av_q2d(rate));
  }
  pipeline.add_source<Packet>(std::move(demux_stage), packets);
  auto frames = outs.front()->graph->frame_queue(pipeline, "decode→", plan.queues.frames);
  add_decode(packets, frames);
  if (outs.size() == 1)
    wire_output(*outs.front(), frames, mux_in.front(), 0, plan.nvdec);
  else
    wire_fork(frames, mux_in);
}

// Several outputs: the steps every chain begins with run once, then the fork
// hands each frame to every output (one handle each: the same pixels,
// last_readers.hpp). NVDEC's frames are already copies in the strategy's
// memory (DecodeStage), so no output holds a decode surface.
void TranscodeSession::Parts::wire_fork(QueuePtr<Frame> frames,
                                        const std::vector<QueuePtr<Packet>>& mux_in) {
  TranscodePlan& plan = run_plan();
  FrameGraph& first_graph = *outs.front()->graph;
  const std::size_t shared = shared_steps();
  bool on_device = plan.nvdec;
  if (shared > 0) {
    auto labels = plan.labels();
    labels.resize(shared);
    report.notes.push_back(
        fmt::format("outputs: {} run once, before the fork", fmt::join(labels, ",")));
    auto [steps, cuda] = take_steps(plan, 0, shared);
    frames = first_graph.add_chain(pipeline, frames, std::move(steps), cuda, plan.nvdec);
    on_device = first_graph.on_device();
  }
  std::vector<FanOut<Frame>::Branch> branches;
  for (const auto& out : outs)
    branches.push_back(
        {out->graph->frame_queue(pipeline, "fork→" + out->label, plan.queues.frames), out->health});
  auto fork = std::make_unique<FanOut<Frame>>(branches);
  fan_out = fork.get();
  pipeline.add_sink<Frame>(std::move(fork), frames);
  for (std::size_t k = 0; k < outs.size(); ++k)
    wire_output(*outs[k], branches[k].queue, mux_in[k], shared, on_device);
}

// How many leading steps every output's chain has alike (label, formats, on the
// GPU or not): the run's --vf, and more where the outputs' own chains agree.
std::size_t TranscodeSession::Parts::shared_steps() const {
  auto on_gpu = [](const TranscodePlan& p, std::size_t i) { return p.cuda && p.cuda->contains(i); };
  const TranscodePlan& first = run_plan();
  std::size_t n = first.chain.size();
  for (const auto& out : outs) {
    const auto& c = out->plan.chain;
    std::size_t i = 0;
    while (i < n && i < c.size() && c[i].label == first.chain[i].label &&
           c[i].in == first.chain[i].in && c[i].out == first.chain[i].out &&
           on_gpu(out->plan, i) == on_gpu(first, i))
      ++i;
    n = i;
  }
  return n;
}

// One output's chain, download, encoder and muxer after `frames`. With several
// outputs each of its stages fails the output alone (BranchStage, BranchSink).
// `shared` of its steps ran before the fork, which leaves frames on the device or not.
void TranscodeSession::Parts::wire_output(OutputPart& out, QueuePtr<Frame> frames,
                                          QueuePtr<Packet> mux_in, std::size_t shared,
                                          bool on_device) {
  const bool empty_chain = out.plan.chain.empty();
  if (out.health) out.graph->isolate(out.health, out.label);
  auto [filters, cuda] = take_steps(out.plan, shared, out.plan.chain.size());
  frames = out.graph->add_chain(pipeline, frames, std::move(filters), cuda, on_device);
  // Frames end in host memory, where an encoder takes them; a decode-only
  // null run (no filter), or one asked to, leaves them on the device.
  if (!(out.plan.null_output && (empty_chain || hooks.frames_on_device)))
    frames = out.graph->to_host(pipeline, frames, out.plan.output);
  if (out.plan.null_output) {
    auto sink = std::make_unique<NullSink>(out.counters, hooks.on_frame);
    sink->read_stamps(o.read_stamps);
    pipeline.add_sink<Frame>(std::move(sink), frames);
    return;
  }
  auto add_encode = [&](std::unique_ptr<Stage<Frame, Packet>> encode) {
    if (out.health)
      encode =
          std::make_unique<BranchStage<Frame, Packet>>(std::move(encode), out.health, out.label);
    pipeline.add_stage<Frame, Packet>(std::move(encode), frames, mux_in);
  };
  if (out.o.encode_segments > 1) {
    auto open = [this, &out, global = global_video_header(out.output.ctx()->oformat)] {
      AVCodecContext* enc = out.encoder.get();
      return open_video_encoder(out.plan.encoder, out.plan.output, enc->time_base, enc->framerate,
                                global, out.o, enc, enc->sample_aspect_ratio, &hdr10);
    };
    auto encode =
        std::make_unique<SegmentedEncodeStage>(open, out.encoder.get(), out.output.video()->index,
                                               out.counters, out.o.encode_segments, out.o.gop);
    encode->read_stamps(o.read_stamps);
    add_encode(std::move(encode));
  } else {
    auto encode =
        std::make_unique<EncodeStage>(out.encoder.get(), out.output.video()->index, out.counters);
    encode->read_stamps(o.read_stamps);
    if (!ladder_dir(out.o).empty()) encode->force_keyframes(out.o.segment_s);  // aligned segments
    add_encode(std::move(encode));
  }
  auto mux_stage =
      std::make_unique<MuxSink>(out.output.ctx(), out.o.output, out.output.source_time_bases(),
                                out.output.video()->index, out.counters);
  mux_stage->check_files(&out.output.files());
  out.mux = mux_stage.get();
  if (out.health)
    pipeline.add_sink<Packet>(
        std::make_unique<BranchSink<Packet>>(std::move(mux_stage), out.health, out.label), mux_in);
  else
    pipeline.add_sink<Packet>(std::move(mux_stage), mux_in);
}

// One decoder, or --decode-sessions N decoding segments at once, each with
// its own session (NVDEC: its own frames context, which holds a segment).
void TranscodeSession::Parts::add_decode(QueuePtr<Packet> packets, QueuePtr<Frame> frames) {
  const TranscodePlan& plan = run_plan();
  choose_decode_sessions();
  if (decode_sessions <= 1) {
    pipeline.add_stage<Packet, Frame>(plain_decode(), packets, frames);
    return;
  }
  auto session = [this] {
    DecoderSession s;
    std::lock_guard lock(
        sessions_mutex);  // StreamSet and the strategy's first use are not concurrent
    if (nvdec) {
      s.nvdec = std::make_unique<NvdecContext>(*retry, streams.make());
      // Its frames are copies (segment_decode.cpp): no surface is held downstream.
      s.context = open_decoder(video, o, s.nvdec.get(), kNvdecFramesHeldCopying);
    } else {
      s.context = open_decoder(video, o);
    }
    return s;
  };
  const std::size_t most = o.segment_packets ? o.segment_packets : plan.nvdec ? kNvdecSegment : 600;
  SegmentDecodeStage::Auto measure;
  if (measure_sessions) {  // a CPU encoder's threads: its own setting, or every core
    const bool cpu_encoder = plan.encoder && !(plan.encoder->capabilities & AV_CODEC_CAP_HARDWARE);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int threads = outs.front()->o.encode_threads;
    measure.governor = make_pipeline_governor(pipeline, run_counters().latency_ns,
                                              cpu_encoder ? (threads > 0 ? threads : cores) : 0,
                                              decode_sessions, expected_frames());
    measure.plain = plain_decode();  // decodes as --decode-sessions 1 until auto decided
  }
  auto stage = std::make_unique<SegmentDecodeStage>(decode_sessions, session, video->time_base,
                                                    decode_limit(), run_counters(), most,
                                                    kSegmentsPerSession, std::move(measure));
  stage->reorders(video->codecpar->video_delay > 0);
  segments = stage.get();
  pipeline.add_stage<Packet, Frame>(std::move(stage), packets, frames);
}

// One decoder session: the input's decoder (NVDEC's frames go downstream as
// they are, each holding a ticket of --max-in-flight).
std::unique_ptr<DecodeStage> TranscodeSession::Parts::plain_decode() {
  auto decode = std::make_unique<DecodeStage>(std::move(decoder), video->time_base, decode_limit(),
                                              run_counters(), nvdec.get());
  if (flight) decode->limit_in_flight(&*flight);
  return decode;
}

// --decode-sessions auto: auto_decode_sessions() with this input, NVML's
// decoder load now, and the budget or the device's free memory.
void TranscodeSession::Parts::choose_decode_sessions() {
  if (decode_sessions != TranscodeOptions::kAutoSessions) return;
  const TranscodePlan& plan = run_plan();
  AutoSessionsInput in;
  in.nvdec = plan.nvdec;
  in.live = plan.live || o.realtime || !network_output_format(o.output).empty();
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
  decode_sessions = pick.sessions;
  measure_sessions = pick.sessions > 1;
  auto_sessions_note =
      fmt::format("decode: decode_sessions auto: {} ({})", pick.sessions, pick.why);
}

TranscodeSession::TranscodeSession(TranscodeOptions options, RunHooks hooks) {
  if (is_stream_copy(options)) {
    check_stream_copy(options);  // refused before anything is opened
    copy_ = std::make_unique<std::pair<TranscodeOptions, RunHooks>>(std::move(options),
                                                                    std::move(hooks));
    return;
  }
  parts_ = std::make_unique<Parts>(std::move(options), std::move(hooks));
}
TranscodeSession::~TranscodeSession() = default;
const TranscodePlan& TranscodeSession::plan() const {
  if (!parts_) throw logic_error("a stream copy (encoder copy) has no plan: nothing is decoded");
  return parts_->run_plan();
}

TranscodeReport TranscodeSession::run() {
  return copy_ ? stream_copy(copy_->first, copy_->second) : run_pipeline();
}

TranscodeReport TranscodeSession::run_pipeline() {
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
          for (const auto& out : p.outs)
            if (out->mux) out->mux->wake();
        }
      }
      if (p.hooks.on_progress && Clock::now() >= next_progress) {
        next_progress += std::chrono::milliseconds(250);
        p.hooks.on_progress({p.run_counters().video_packets_written.load(), total,
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
    p.hooks.on_progress({p.run_counters().video_packets_written.load(), total, report.wall_s});
  p.collect(report);
  report.output_cut = p.outs.front()->mux && p.outs.front()->mux->cut();
  if (p.ladder) {  // what the user reads names the ladder's folder, not its staging
    failure = p.ladder->in_final_names(failure);
    for (auto& n : report.notes) n = p.ladder->in_final_names(n);
  }
  if (!failure.empty()) {
    report.failure = failure;  // a ladder's staging folder goes with the session
    throw transcode_failed(failure, std::move(report), gpu_fault);  // the partial output goes
  }
  if (p.run_counters().disconnects > 0)
    report.notes.push_back(
        "the live input ended with a read error (the sender closed the connection)");
  if (report.stalls > 0)
    report.notes.push_back(fmt::format(
        "the input stalled {} time(s) (no data for {} s){}", report.stalls, p.o.stall_timeout_s,
        report.reconnects ? fmt::format("; reconnected {} time(s)", report.reconnects)
                          : std::string()));
  const auto frames_cut = p.run_counters().frames_cut.load();
  if (report.frames_decoded == 0 && p.cut && frames_cut > 0)
    throw input_error(fmt::format("{}: no frame is shown inside the {} ({} decoded, all outside)",
                                  p.o.input, p.cut->describe(), frames_cut));
  if (report.frames_decoded == 0)
    throw input_error(fmt::format("{}: no video frame could be decoded", p.o.input));
  p.finish_outputs(report);
  return report;
}

TranscodeReport transcode(const TranscodeOptions& options, const RunHooks& hooks) {
  return TranscodeSession(options, hooks).run();
}

}  // namespace vpipe
