// The transcode: a TranscodeSession made from options (transcode_options.hpp)
// and a plan (transcode_plan.hpp), run once, gives a TranscodeReport.
// transcode() is that in one call; `vpipe transcode`, `--streams`, `bench
// pipeline` and the tests use it.
//
//   TranscodeSession session(options);   // checks, opens, plans, wires
//   TranscodeReport report = session.run();
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/pipeline.hpp"
#include "vpipe/pipeline/graph/queue.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

namespace vpipe {

class NvdecContext;
class HostFramePool;

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
    int decode_surfaces = 0;
  };
  std::optional<NvdecPool> nvdec_pool;
};

// JSON, as the report writes them.
void to_json(nlohmann::json& j, const Percentiles& p);
void to_json(nlohmann::json& j, const GlassReport& g);
void to_json(nlohmann::json& j, const InFlightReport& f);
void to_json(nlohmann::json& j, const RingReport& r);
void to_json(nlohmann::json& j, const MemoryReport& m);

struct TranscodeReport {
  std::string input, output, filters, device, decode, encoder;
  std::vector<std::string> effective_chain;  // after negotiation
  FrameFormat input_format, output_format;
  std::int64_t packets_read = 0;
  std::int64_t frames_decoded = 0;
  std::int64_t frames_encoded = 0;
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

// Opens `stream`'s decoder the way transcode() does (threads from `o`; NVDEC
// through `nvdec`, with `nvdec_frames_held` surfaces for frames in flight, or
// host frames from `host_pool`). Errors name o.input.
[[nodiscard]] UniqueAVCodecContext open_decoder(AVStream* stream, const TranscodeOptions& o,
                                                NvdecContext* nvdec = nullptr,
                                                int nvdec_frames_held = 0,
                                                HostFramePool* host_pool = nullptr);

// Opens a video encoder the way transcode() does (quality options from `o`,
// colour properties from `props` when given, the sample aspect ratio the
// frames have: {0, 1} for unknown; sample_aspect_after gives it for a chain).
[[nodiscard]] UniqueAVCodecContext open_video_encoder(const AVCodec* codec,
                                                      const FrameFormat& format,
                                                      AVRational time_base, AVRational frame_rate,
                                                      bool global_header, const TranscodeOptions& o,
                                                      const AVCodecContext* props,
                                                      AVRational sample_aspect = {0, 1});

// Runs o.streams copies of the transcode at once, in one process, sharing one
// memory strategy per GPU (made from o.mem and o.budget): the way many live feeds run
// on one GPU. Output k (1-based) is OUT with "-k" before its extension; null
// stays null. Each stream's report is its own; the memory figures in them are
// the shared strategy's. A stream that fails does not stop the others; the
// failure is in its report.
struct MultiTranscodeReport {
  std::vector<TranscodeReport> streams;
  std::vector<std::string> failures;  // per stream, empty when it completed
  std::vector<int> gpus;              // per stream, the device it ran on (-1: the CPU path)
  double wall_s = 0;
  [[nodiscard]] std::int64_t frames_written() const;  // all streams
  [[nodiscard]] double fps_total() const;             // all streams' frames over wall_s
  [[nodiscard]] nlohmann::json to_json() const;
};
[[nodiscard]] std::string stream_output_name(const std::string& output, int k);
MultiTranscodeReport transcode_streams(const TranscodeOptions& options, const RunHooks& hooks = {});

// One transcode: the constructor checks the options, opens the input, plans
// (plan()), opens the output and the CUDA path's parts, and wires the stages;
// run() runs them once. It owns every resource of the run as a member, in the
// order they must die (see transcode.cpp). Output "null" writes nothing (no
// encoder, no muxer): the run measures decode and filters. Throws input_error
// / chain_error for bad input; a failure mid-run throws transcode_failed with
// the report. A partial output is removed on failure (unless keep_partial).
class TranscodeSession {
 public:
  explicit TranscodeSession(TranscodeOptions options, RunHooks hooks = {});
  ~TranscodeSession();
  TranscodeSession(const TranscodeSession&) = delete;
  TranscodeSession& operator=(const TranscodeSession&) = delete;

  [[nodiscard]] const TranscodePlan& plan() const;
  TranscodeReport run();

 private:
  struct Parts;  // the members, in order (transcode.cpp)
  std::unique_ptr<Parts> parts_;
};

// TranscodeSession(options).run().
TranscodeReport transcode(const TranscodeOptions& options, const RunHooks& hooks = {});

}  // namespace vpipe
