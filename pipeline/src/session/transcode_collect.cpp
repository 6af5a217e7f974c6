// The end of a transcode (TranscodeSession::Parts, transcode_parts.hpp): what the report says
// of the run (its counters, decode sessions, graphs, memory), what a metrics endpoint shows
// while it runs, and each output finished and put in place (a ladder's master written).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>

#include "transcode_parts.hpp"
#include "vpipe/pipeline/io/dash.hpp"
#include "vpipe/pipeline/io/hls.hpp"

namespace vpipe {

namespace fs = std::filesystem;

// Expected frame count, for progress (0: unknown).
std::int64_t TranscodeSession::Parts::expected_frames() const {
  std::int64_t total = video->nb_frames;
  if (total <= 0 && input->duration > 0 && frame_rate.num > 0)
    total = static_cast<std::int64_t>(static_cast<double>(input->duration) / AV_TIME_BASE *
                                      av_q2d(frame_rate));
  if (cut && cut->start && frame_rate.num > 0) {  // a cut's span, at the nominal rate
    const double end =
        cut->end.value_or(cut->start.value() + static_cast<double>(total) / av_q2d(frame_rate));
    total =
        std::min(total > 0 ? total : INT64_MAX,
                 static_cast<std::int64_t>(std::ceil((end - *cut->start) * av_q2d(frame_rate))));
  }
  if (const auto made = run_plan().rate; made && frame_rate.num > 0)  // fps=
    total = static_cast<std::int64_t>(
        std::ceil(static_cast<double>(total) * av_q2d(*made) / av_q2d(frame_rate)));
  total *= o.loop;
  if (o.max_frames && (total <= 0 || *o.max_frames < total)) total = *o.max_frames;
  return total;
}

void TranscodeSession::Parts::collect(TranscodeReport& r) const {
  const MediaCounters& counters = run_counters();
  if (!auto_sessions_note.empty()) r.notes.push_back(auto_sessions_note);
  if (cut)
    r.notes.push_back(
        fmt::format("cut: {} decoded frames shown outside it dropped (decoded from "
                    "the keyframe before the start, or reordered past the end)",
                    counters.frames_cut.load()));
  if (segments) {
    const auto st = segments->stats();
    if (st.segments == 0 && st.plain_frames > 0)
      r.notes.push_back(fmt::format("decode: one session (the plain decoder) for all {} frames",
                                    st.plain_frames));
    else
      r.notes.push_back(fmt::format(
          "decode: {} sessions over {} segments (GOPs), {} open (decoded after the GOP before), "
          "{} decoder restarts{}{}",
          st.sessions, st.segments, st.open_gops, st.restarts,
          st.plain_frames > 0
              ? fmt::format("; the first {} frames by one session while auto measured",
                            st.plain_frames)
              : "",
          st.fell_back.empty() ? "" : "; " + st.fell_back + ": one session took over"));
    if (!st.measured.empty())  // last: the line bench decode's table shows
      r.notes.push_back("decode: decode_sessions auto, measured: " + st.measured);
  }
  if (const auto g = outs.front()->graph ? outs.front()->graph->graph_stats() : std::nullopt)
    r.notes.push_back(fmt::format("graphs: {} launches, {} captures, {} node updates refused{}",
                                  g->launches, g->captures, g->updates_refused,
                                  g->fallback.empty() ? "" : "; then launches: " + g->fallback));
  for (const auto& out : outs)  // fps=: what each rate stage kept, as FFmpeg's fps filter logs it
    for (const RateStats& s : out->graph ? out->graph->rate_stats() : std::vector<RateStats>{})
      r.notes.push_back(fmt::format("fps{}: {} frames in, {} out; {} dropped, {} repeated",
                                    out->label.empty() ? "" : " (" + out->label + ")", s.in, s.out,
                                    s.dropped, s.repeated));
  copy_counts(counters, r);
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
  m.pinned_bytes = pinned_bytes();
  const FrameGraph& graph = *outs.front()->graph;  // the rings before the fork
  if (const auto* ring = graph.upload_ring()) m.upload_ring = ring_report(*ring);
  if (const auto* up = graph.upload_stage())
    m.upload = MemoryReport::Upload{up->direct(), up->unstaged()};
  if (host_pool)
    m.decoded_into_pinned =
        MemoryReport::PinnedDecode{host_pool->frames(), host_pool->buffers(), host_pool->bytes()};
  if (const auto* ring = graph.download_ring()) m.download_ring = ring_report(*ring);
  if (nvdec)
    m.nvdec_pool = MemoryReport::NvdecPool{nvdec->pool_buffers(), nvdec->pool_bytes(),
                                           nvdec->decode_surfaces(), std::string(nvdec->api())};
  return m;
}

std::size_t TranscodeSession::Parts::pinned_bytes() const {
  std::size_t bytes = host_pool ? static_cast<std::size_t>(host_pool->bytes()) : 0;
  for (const auto& out : outs) bytes += out->graph->pinned_bytes();
  return bytes;
}

// While a run goes on: what a metrics endpoint shows (any thread).
LiveStats TranscodeSession::Parts::live_stats(Clock::time_point t0) const {
  const MediaCounters& counters = run_counters();
  LiveStats s;
  s.stream = hooks.stream_label;
  s.input = o.input;
  s.output = o.output;
  s.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  copy_counts(counters, s);
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
    s.pinned_bytes = static_cast<std::int64_t>(pinned_bytes());
  }
  return s;
}

namespace {

// --hls or --dash: the ladder's master over the renditions that finished
// (each: its playlist or manifest, and its size).
void write_ladder_master(const TranscodeOptions& o, const std::vector<HlsRendition>& done) {
  if (!o.hls.empty()) write_hls_master(o.hls, done);
  if (o.dash.empty()) return;
  std::vector<DashRendition> renditions;
  for (const auto& r : done)
    renditions.push_back({r.playlist, fs::path(r.playlist).parent_path().filename().string()});
  write_dash_master(o.dash, renditions);
}

// A failed rendition's playlist or manifest and its segments (no ladder: nothing).
void remove_rendition(const TranscodeOptions& o, const std::string& path) noexcept {
  if (!o.hls.empty()) remove_hls_rendition(path);
  if (!o.dash.empty()) remove_dash_rendition(path);
}

}  // namespace

// Each output closed and put in place; with several, one that failed is
// reported (its partial file removed) after the others are finished, and the
// run then fails naming it. A ladder's master lists the renditions that finished.
void TranscodeSession::Parts::finish_outputs(TranscodeReport& r) {
  const bool several = outs.size() > 1;
  std::vector<std::string> failed;
  std::vector<HlsRendition> finished;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const OutputPart& out = *outs[k];
    OutputReport each;
    each.output = shown_name(out);
    each.encoder = out.plan.encoder ? out.plan.encoder->name : "none (null output)";
    each.effective_chain = out.plan.labels();
    each.format = out.plan.output;
    each.frames = out.counters.video_packets_written.load();
    each.fps = r.wall_s > 0 ? static_cast<double>(each.frames) / r.wall_s : 0;
    each.latency_ms_p50 = static_cast<double>(out.counters.latency_ns.percentile(0.50)) * 1e-6;
    each.latency_ms_p99 = static_cast<double>(out.counters.latency_ns.percentile(0.99)) * 1e-6;
    each.fork_wait_s = fan_out ? fan_out->blocked_s(k) : 0;
    each.failure = out.health && out.health->failed() ? out.health->why() : "";
    if (ladder) each.failure = ladder->in_final_names(each.failure);
    if (each.failure.empty() && !out.plan.null_output) {
      try {
        outs[k]->output.finished();
      } catch (const std::exception& e) {
        if (!several) throw;  // the run's own failure, as it is
        each.failure = e.what();
      }
    }
    if (!each.failure.empty()) {
      failed.push_back(fmt::format("{}: {}", each.output, each.failure));
      remove_rendition(o, out.o.output);  // a ladder's: its playlist and segments
    } else
      finished.push_back({out.o.output, each.format.width, each.format.height});
    if (several) r.outputs.push_back(std::move(each));
  }
  if (ladder && !finished.empty()) {  // the renditions that finished, in place of the old ladder
    write_ladder_master(o, finished);
    ladder->commit();
  }
  if (failed.empty()) return;
  r.failure = fmt::format("{} of {} outputs failed ({}){}", failed.size(), outs.size(),
                          fmt::join(failed, "; "),
                          failed.size() < outs.size() ? "; the others were finished" : "");
  throw transcode_failed(r.failure, r);
}

}  // namespace vpipe
