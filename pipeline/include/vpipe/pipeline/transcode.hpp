// transcode(): the sample transcoder as a function, used by `vpipe transcode`
// and by the end-to-end tests.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/frame.hpp"
#include "vpipe/pipeline/pipeline.hpp"
#include "vpipe/pipeline/queue.hpp"

namespace vpipe {

class MemoryStrategy;

struct TranscodeProgress {
  std::int64_t frames_done = 0;
  std::int64_t frames_total = 0;  // estimate; 0 = unknown
  double elapsed_s = 0;
};

struct TranscodeOptions {
  std::string input;
  std::string output;
  std::string filters;                  // --vf
  std::string device = "auto";          // cpu | cuda | auto (cuda where a device is usable)
  std::string decode = "auto";          // cpu | nvdec | auto (nvdec when frames go to a CUDA filter)
  std::string mem = "pool";             // device memory strategy: naive | pool | vmm | slab
  std::string host = "pinned";          // host staging: pinned | pageable
  std::string encoder = "auto";         // auto (h264_nvenc if usable, else libx264) or any FFmpeg encoder
  int crf = 23;                         // libx264
  std::string preset = "veryfast";      // libx264
  int qscale = 3;                       // mpeg4: 2 (best) .. 31
  std::optional<std::int64_t> max_frames;
  std::size_t queue_depth = 8;          // frames in flight between two stages
  int decode_threads = 0;               // 0: FFmpeg chooses
  bool keep_partial = false;            // keep the output file when the run fails
  bool realtime = false;                // pace the input at its native rate
  int loop = 1;                         // read the input this many times over
  // Full frame queue: block | drop-oldest | drop-newest; auto: block for a
  // file, drop-newest for a live input (latency must stay bounded).
  std::string drop = "auto";
  // At most this many frames between the decoder and the end (0: no limit
  // but the queues'); at the limit the decoder waits (block) or drops.
  std::size_t max_in_flight = 0;
  // Live inputs (udp://, rtp://, srt://, rtsp://, rtmp://, tcp://): opened
  // with low-latency options; a read that waits past stall_timeout_s ends the
  // input (the output is finalized), or reconnects up to `reconnect` times
  // where the protocol has connections.
  double stall_timeout_s = 5.0;
  int reconnect = 3;
  std::vector<std::string> input_options;  // "key=value", passed to FFmpeg when opening the input
  // Read each frame's stamp (written by a sender's `stamp` filter) before
  // encoding: glass-to-glass latency in the report.
  bool read_stamps = false;
  // Several pipelines in one process (--streams): the memory strategy they
  // share. Null: this run makes its own from `mem` and `budget`.
  MemoryStrategy* shared_memory = nullptr;
  std::optional<std::size_t> budget;    // CUDA path: device memory cap for the strategy
  bool download_copy = false;           // A/B: copy downloads out of the slot (older way)
  const std::atomic<int>* interrupt = nullptr;  // non-zero: stop gracefully (SIGINT)
  std::function<void(const TranscodeProgress&)> on_progress;  // ~4 times a second
  // Output "null": each frame at the end, valid during the call only (its
  // memory may be a staging slot that goes back to its ring): copy to keep.
  std::function<void(const Frame&)> on_frame;
};

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
  std::int64_t frames_dropped = 0;      // by the --drop policy, all queues
  bool live = false;                    // a live input (network URL)
  std::string drop;                     // the policy in effect
  std::int64_t stalls = 0, reconnects = 0;
  nlohmann::json glass;                 // --read-stamps: p50/p99/max ms, frames with a stamp
  nlohmann::json in_flight;             // --max-in-flight: limit, high water, dropped, waited
  int copied_streams = 0;
  double wall_s = 0;
  double fps = 0;
  double latency_ms_p50 = 0, latency_ms_p90 = 0, latency_ms_p99 = 0, latency_ms_max = 0;
  bool interrupted = false;
  std::vector<StageStats> stages;
  std::vector<QueueStats> queues;
  std::vector<std::string> notes;  // e.g. "CPU path: no CUDA device"
  nlohmann::json memory;           // CUDA path: the strategy's statistics and staging
  std::string failure;             // what ended the run, when it failed mid-way

  [[nodiscard]] nlohmann::json to_json() const;
};

// A run that failed after it started (out of memory after retries, a
// writer error…): the report of what was done, with status "failed: …".
class transcode_failed : public std::runtime_error {
 public:
  transcode_failed(const std::string& what, TranscodeReport r)
      : std::runtime_error(what), report(std::move(r)) {}
  TranscodeReport report;
};

// Opens a video encoder the way transcode() does (quality options from `o`,
// colour properties from `props` when given).
[[nodiscard]] UniqueAVCodecContext open_video_encoder(const AVCodec* codec, const FrameFormat& format,
                                                      AVRational time_base, AVRational frame_rate,
                                                      bool global_header, const TranscodeOptions& o,
                                                      const AVCodecContext* props);

// Runs `streams` copies of the transcode at once, in one process, sharing one
// memory strategy (made from o.mem and o.budget): the way many live feeds run
// on one GPU. Output k (1-based) is OUT with "-k" before its extension; null
// stays null. Each stream's report is its own; the memory figures in them are
// the shared strategy's. A stream that fails does not stop the others; the
// failure is in its report.
struct MultiTranscodeReport {
  std::vector<TranscodeReport> streams;
  std::vector<std::string> failures;  // per stream, empty when it completed
  double wall_s = 0;
  [[nodiscard]] nlohmann::json to_json() const;
};
[[nodiscard]] std::string stream_output_name(const std::string& output, int k);
MultiTranscodeReport transcode_streams(const TranscodeOptions& options, int streams);

// Runs the whole transcode. Output "null" writes nothing (no encoder, no
// muxer): the run measures decode and filters. Throws input_error / chain_error for bad input,
// and removes a partial output on failure (unless keep_partial).
TranscodeReport transcode(const TranscodeOptions& options);

}  // namespace vpipe
