// What running transcodes look like now, for a metrics endpoint: a session
// given a LiveRegistry (TranscodeOptions::live) adds itself when run() starts
// and leaves when it returns; sample() reads every one from any thread (the
// counters are atomics, the queues and the strategy have their own locks).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "vpipe/pipeline/graph/queue.hpp"

namespace vpipe {

struct LiveStats {
  std::string stream;  // "1" for a single run; 1..N for --streams
  std::string input, output;
  double elapsed_s = 0;
  std::int64_t packets_read = 0, frames_decoded = 0, frames_written = 0, frames_dropped = 0;
  std::int64_t decode_errors = 0, stalls = 0, reconnects = 0;
  double latency_ms_p50 = 0, latency_ms_p99 = 0, latency_ms_max = 0;  // demux → output, per frame
  std::int64_t glass_frames = 0;  // --read-stamps: frames with a stamp, and their latency
  double glass_ms_p50 = 0, glass_ms_p99 = 0;
  std::vector<QueueStats> queues;
  // The memory strategy (CUDA path); streams of one process may share it.
  std::string strategy;  // empty: none (CPU path)
  std::int64_t memory_in_use = 0, memory_peak = 0, memory_reserved = 0;
  std::int64_t allocation_failures = 0, allocation_retries = 0;
  std::int64_t pinned_bytes = 0;
};

class LiveRegistry {
 public:
  using Sampler = std::function<LiveStats()>;
  void add(const void* run, Sampler sample);
  void remove(const void* run);
  [[nodiscard]] std::vector<LiveStats> sample() const;  // in the order the runs started
  // Ready to serve: at least one run, and every run has written a frame.
  [[nodiscard]] bool ready() const;

 private:
  mutable std::mutex m_;
  std::vector<std::pair<const void*, Sampler>> runs_;
};

}  // namespace vpipe
