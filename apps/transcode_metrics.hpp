// Prometheus text for running transcodes (`vpipe transcode --metrics-port`,
// also with --streams): one table of series, each sampled per stream from
// LiveStats; the memory strategy's series once per strategy (streams share
// one); the process's resident memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vpipe/pipeline/session/live_stats.hpp"

namespace vpipe {

[[nodiscard]] std::string transcode_metrics_text(const std::vector<LiveStats>& runs);
// Resident set size of this process (/proc/self/statm).
[[nodiscard]] std::int64_t process_rss_bytes();

}  // namespace vpipe
