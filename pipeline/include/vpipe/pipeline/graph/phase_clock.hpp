// PhaseClock: where a stage's time a frame goes, part by part, in steady state.
//
// A stage's busy time says how long it took a frame; its phases say which of
// its calls took it (decode: FFmpeg's send, its receive, vpipe's copy out).
// The first `warmup` items are left out, so a decoder's set-up in its first
// call does not weigh on the mean (issue #45's decode phases). A PhaseClock
// lives on its stage's thread; phases() is read after the run has joined.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

template <std::size_t N>
class PhaseClock {
 public:
  // Items left out at the start, by default: set-up then is not the stage's steady cost.
  static constexpr std::uint64_t kWarmup = 30;

  explicit PhaseClock(std::array<const char*, N> names, std::uint64_t warmup = kWarmup)
      : names_(names), warmup_(warmup) {}

  // Adds the time since `since` to phase `i` (once past the warm-up);
  // returns now, the next phase's start.
  Clock::time_point lap(std::size_t i, Clock::time_point since) {
    const auto now = Clock::now();
    if (seen_ >= warmup_) ns_[i] += std::chrono::nanoseconds(now - since).count();
    return now;
  }
  // One item is done.
  void item() { ++seen_; }

  // Each phase's mean over the steady items; empty while there were none.
  [[nodiscard]] std::vector<Phase> phases() const {
    if (seen_ <= warmup_) return {};
    const std::uint64_t steady = seen_ - warmup_;
    std::vector<Phase> out;
    for (std::size_t i = 0; i < N; ++i)
      out.push_back(
          {names_[i], static_cast<double>(ns_[i]) * 1e-6 / static_cast<double>(steady), steady});
    return out;
  }

 private:
  std::array<const char*, N> names_;
  std::uint64_t warmup_;
  std::uint64_t seen_ = 0;
  std::array<std::int64_t, N> ns_{};
};

}  // namespace vpipe
