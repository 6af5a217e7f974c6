// What a transcode did: the report (TranscodeReport and its parts) and its
// JSON, and the run's counters as one field table (count_fields) that the
// report, its JSON, the live view of a running session (LiveStats) and the
// Prometheus text all read, so a counter is named in one place.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/memory/histogram.hpp"
#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/pipeline.hpp"
#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/session/live_stats.hpp"

namespace vpipe {

// JSON text that never throws on a string that is not UTF-8 (a file's name is bytes, and
// "odd_\xff.mp4" stopped every report): such bytes are written as U+FFFD.
[[nodiscard]] inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Three quantiles of a histogram, in the unit the field's name gives.
struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
};

// --read-stamps: the age of each picture's stamp when it reaches the encoder.
struct GlassReport {
  Percentiles ms;
  std::int64_t frames_with_stamp = 0, frames_without = 0;
  Percentiles steady_ms;  // frames read 2 s or more after the first stamp
  std::int64_t steady_frames = 0;
};

// --max-in-flight: the decoder's limit on frames in the pipeline.
struct InFlightReport {
  std::size_t limit = 0, high_water = 0;
  std::int64_t dropped_at_limit = 0;
  double decoder_waited_s = 0;
};

// A pinned staging ring's use.
struct RingReport {
  std::size_t slots = 0, acquires = 0, waits = 0;
  double waited_s = 0;
};

// The CUDA path's memory: the strategy's statistics and the staging.
struct MemoryReport {
  std::string strategy;
  std::int64_t allocations = 0, bytes_peak = 0, bytes_total = 0, failures = 0;
  std::int64_t retries = 0, failures_after_retry = 0, device_syncs = 0;
  std::optional<std::size_t> budget_bytes, reserved_bytes;
  Percentiles allocate_us;
  std::string host_staging, download;
  std::size_t pinned_bytes = 0;
  std::optional<RingReport> upload_ring, download_ring;
  struct Upload {
    std::int64_t direct_from_decoder = 0, unstaged = 0;
  };
  std::optional<Upload> upload;
  struct PinnedDecode {  // CPU decode straight into pinned buffers
    std::int64_t frames = 0, buffers = 0, bytes = 0;
  };
  std::optional<PinnedDecode> decoded_into_pinned;
  struct NvdecPool {  // NVDEC's output copies and its decode surfaces
    std::int64_t buffers = 0, bytes = 0;
    int decode_surfaces = 0;  // 0 with cuvid: its own
    std::string api;          // --nvdec-api: hwaccel or cuvid
  };
  std::optional<NvdecPool> nvdec_pool;
};

// JSON, as the report writes them.
void to_json(nlohmann::json& j, const Percentiles& p);
void to_json(nlohmann::json& j, const GlassReport& g);
void to_json(nlohmann::json& j, const InFlightReport& f);
void to_json(nlohmann::json& j, const RingReport& r);
void to_json(nlohmann::json& j, const MemoryReport& m);

// Several outputs from one decode (--output): each one's share of the run.
struct OutputReport {
  std::string output, encoder;
  std::vector<std::string> effective_chain;
  FrameFormat format;
  std::int64_t frames = 0;  // video packets written
  double fps = 0;           // frames over the whole run's wall time
  double latency_ms_p50 = 0, latency_ms_p99 = 0;
  // How long the fork waited for room in this output's queue: the output that
  // waits most is the one that holds the others back.
  double fork_wait_s = 0;
  std::string failure;  // empty: finished
};

struct TranscodeReport {
  std::string input, output, filters, device, decode, encoder;
  std::vector<OutputReport> outputs;         // several outputs: every one, the first included
  std::vector<std::string> effective_chain;  // after negotiation
  FrameFormat input_format, output_format;
  std::int64_t packets_read = 0;
  std::int64_t frames_decoded = 0;
  std::int64_t frames_encoded = 0;
  std::int64_t encoder_dropped = 0;  // of those, packets of no bytes (MediaCounters)
  std::int64_t video_packets_written = 0;
  std::int64_t other_packets_written = 0;
  std::int64_t decode_errors = 0;
  std::int64_t frames_fitted = 0;
  std::int64_t ts_discontinuities = 0;
  std::int64_t timestamps_repaired = 0;  // frames whose time went backwards (damage), moved on
  std::int64_t packets_damaged = 0;      // copied packets the muxer refused, dropped
  std::int64_t frames_dropped = 0;       // by the --drop policy, all queues
  bool live = false;                     // a live input (network URL)
  std::string drop;                      // the policy in effect
  std::int64_t stalls = 0, reconnects = 0;
  std::optional<GlassReport> glass;         // --read-stamps
  std::optional<InFlightReport> in_flight;  // --max-in-flight
  int copied_streams = 0;
  double wall_s = 0;
  double fps = 0;
  double steady_fps = 0;  // after the first 30 frames written (MediaCounters::steady_fps)
  double latency_ms_p50 = 0, latency_ms_p90 = 0, latency_ms_p99 = 0, latency_ms_max = 0;
  bool interrupted = false;
  bool output_cut = false;  // a stream output stopped taking data: writing ended at Ctrl-C
  std::vector<StageStats> stages;
  std::vector<QueueStats> queues;
  std::vector<std::string> notes;      // e.g. "CPU path: no CUDA device"
  std::optional<MemoryReport> memory;  // the CUDA path
  std::string failure;                 // what ended the run, when it failed mid-way

  [[nodiscard]] nlohmann::json to_json() const;
  // Damage in the input the run got past, each counted: "completed with N errors".
  [[nodiscard]] std::int64_t errors() const {
    return decode_errors + timestamps_repaired + packets_damaged;
  }
};

// A run that failed after it started (out of memory after retries, a
// writer error…): the report of what was done, with status "failed: …".
class transcode_failed : public std::runtime_error {
 public:
  transcode_failed(const std::string& what, TranscodeReport r, bool gpu = false)
      : std::runtime_error(what), report(std::move(r)), gpu_fault(gpu) {}
  TranscodeReport report;
  bool gpu_fault;  // the cause was a CUDA error (cuda_error, out_of_memory included)
};

// Whether something transcode() threw came from CUDA: a cuda_error (out_of_memory included)
// before the run, or a transcode_failed caused by one. What --on-gpu-error move acts on.
[[nodiscard]] bool is_gpu_fault(const std::exception& e);

// A counter of the run: where MediaCounters keeps it, where the report and its JSON
// put it, and, for those a running session shows, its LiveStats field and metric.
struct CountField {
  std::string_view json;  // the key in the report's JSON
  bool in_frames;         // under "frames" in the JSON (else at its top level)
  std::int64_t TranscodeReport::*report;
  std::atomic<std::int64_t> MediaCounters::*counter;
  std::int64_t LiveStats::*live = nullptr;  // null: in the report only
  std::string_view metric = {};             // the Prometheus counter (live fields)
  std::string_view help = {};
};
[[nodiscard]] const std::vector<CountField>& count_fields();
// Every count_fields() counter, copied into the report / the live view.
void copy_counts(const MediaCounters& c, TranscodeReport& r);
void copy_counts(const MediaCounters& c, LiveStats& s);

// The three quantiles of `h`, times `scale` (1e-6: ns → ms).
[[nodiscard]] Percentiles percentiles(const Histogram& h, double scale);
[[nodiscard]] RingReport ring_report(const PinnedRing& r);

}  // namespace vpipe
