#include "vpipe/pipeline/session/transcode_report.hpp"

#include <fmt/format.h>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "vpipe/base/errors.hpp"

namespace vpipe {

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
    j["nvdec_pool"] = {{"buffers", n->buffers},
                       {"bytes", n->bytes},
                       {"decode_surfaces", n->decode_surfaces},
                       {"api", n->api}};
}

const std::vector<CountField>& count_fields() {
  using R = TranscodeReport;
  using C = MediaCounters;
  using L = LiveStats;
  static const std::vector<CountField> table = {
      {"packets_read", true, &R::packets_read, &C::packets_read, &L::packets_read,
       "vpipe_packets_read_total", "Packets read from the input."},
      {"decoded", true, &R::frames_decoded, &C::frames_decoded, &L::frames_decoded,
       "vpipe_frames_decoded_total", "Frames out of the decoder."},
      {"encoded", true, &R::frames_encoded, &C::frames_encoded},
      {"encoder_dropped", true, &R::encoder_dropped, &C::encoder_dropped},
      {"video_packets_written", true, &R::video_packets_written, &C::video_packets_written,
       &L::frames_written, "vpipe_frames_written_total",
       "Frames encoded and written (or consumed by a null output)."},
      {"other_packets_written", true, &R::other_packets_written, &C::other_packets_written},
      {"decode_errors", true, &R::decode_errors, &C::decode_errors, &L::decode_errors,
       "vpipe_decode_errors_total", "Damaged packets or frames the decoder skipped."},
      {"fitted_to_encoder", true, &R::frames_fitted, &C::frames_fitted},
      {"timestamp_discontinuities", true, &R::ts_discontinuities, &C::ts_discontinuities},
      {"timestamps_repaired", true, &R::timestamps_repaired, &C::timestamps_repaired},
      {"copied_packets_damaged", true, &R::packets_damaged, &C::packets_damaged},
      {"stalls", false, &R::stalls, &C::stalls, &L::stalls, "vpipe_input_stalls_total",
       "Reads that waited past the stall timeout."},
      {"reconnects", false, &R::reconnects, &C::reconnects, &L::reconnects,
       "vpipe_input_reconnects_total", "Reconnections of a live input."},
  };
  return table;
}

void copy_counts(const MediaCounters& c, TranscodeReport& r) {
  for (const auto& f : count_fields()) r.*f.report = (c.*f.counter).load();
}

void copy_counts(const MediaCounters& c, LiveStats& s) {
  for (const auto& f : count_fields())
    if (f.live) s.*f.live = (c.*f.counter).load();
}

Percentiles percentiles(const Histogram& h, double scale) {
  return {static_cast<double>(h.percentile(0.50)) * scale,
          static_cast<double>(h.percentile(0.99)) * scale, static_cast<double>(h.max()) * scale};
}

RingReport ring_report(const PinnedRing& r) {
  const auto s = r.stats();
  return {r.slot_count(), s.acquires, s.waits, s.waited_s};
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
    for (const auto& ph : s.phases) stages_j.back()["phases_ms_per_item"][ph.name] = ph.ms_per_item;
    if (!s.phases.empty()) stages_j.back()["phase_items"] = s.phases.front().items;
  }
  json queues_j = json::array();
  for (const auto& q : queues)
    queues_j.push_back({{"name", q.name},
                        {"capacity", q.capacity},
                        {"high_water", q.high_water},
                        {"pushed", q.pushed},
                        {"producer_blocked_s", q.producer_blocked_s},
                        {"dropped", q.dropped}});
  json frames = {{"errors", errors()}, {"dropped", frames_dropped}};
  json out = {{"input", input},
              {"output", output},
              {"filters", filters},
              {"effective_chain", effective_chain},
              {"device", device},
              {"decode", decode},
              {"encoder", encoder},
              {"input_format", fmt_json(input_format)},
              {"output_format", fmt_json(output_format)},
              {"live", live},
              {"drop_policy", drop},
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
                         : errors()       ? fmt::format("completed with {} errors", errors())
                                          : std::string(interrupted ? "interrupted" : "ok")},
              {"stages", stages_j},
              {"memory", memory ? json(*memory) : json()},
              {"queues", queues_j},
              {"notes", notes}};
  for (const auto& f : count_fields())  // the counters, from their one table
    (f.in_frames ? frames : out)[std::string(f.json)] = this->*f.report;
  out["frames"] = std::move(frames);
  if (!outputs.empty()) {
    json each = json::array();
    for (const auto& o : outputs)
      each.push_back({{"output", o.output},
                      {"encoder", o.encoder},
                      {"effective_chain", o.effective_chain},
                      {"output_format", fmt_json(o.format)},
                      {"frames", o.frames},
                      {"fps", o.fps},
                      {"latency_ms", {{"p50", o.latency_ms_p50}, {"p99", o.latency_ms_p99}}},
                      {"fork_wait_s", o.fork_wait_s},
                      {"status", o.failure.empty() ? "ok" : "failed: " + o.failure}});
    out["outputs"] = std::move(each);
  }
  return out;
}

bool is_gpu_fault(const std::exception& e) {
  if (const auto* failed = dynamic_cast<const transcode_failed*>(&e)) return failed->gpu_fault;
  return dynamic_cast<const cuda_error*>(&e) != nullptr;
}

}  // namespace vpipe
