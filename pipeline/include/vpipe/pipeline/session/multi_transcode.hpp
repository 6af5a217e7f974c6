// Several copies of a transcode at once in one process (--streams N), placed
// on GPUs by headroom (--gpus), each stream's report its own.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe {

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

}  // namespace vpipe
