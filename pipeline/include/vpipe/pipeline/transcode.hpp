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

// Bad user input (file, option): the message names the file and the cause.
class input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
  std::string drop = "block";           // full frame queue: block | drop-oldest | drop-newest
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
  std::int64_t frames_dropped = 0;      // by the --drop policy, all queues  // timestamp jumps closed up (MPEG-TS splices)  // scaled to the encoder's size after a mid-stream size change
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

// Runs the whole transcode. Output "null" writes nothing (no encoder, no
// muxer): the run measures decode and filters. Throws input_error / chain_error for bad input,
// and removes a partial output on failure (unless keep_partial).
TranscodeReport transcode(const TranscodeOptions& options);

}  // namespace vpipe
