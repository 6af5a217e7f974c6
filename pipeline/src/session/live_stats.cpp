#include "vpipe/pipeline/session/live_stats.hpp"

#include <algorithm>

namespace vpipe {

void LiveRegistry::add(const void* run, Sampler sample) {
  std::lock_guard lock(m_);
  runs_.emplace_back(run, std::move(sample));
}

void LiveRegistry::remove(const void* run) {
  std::lock_guard lock(m_);
  std::erase_if(runs_, [&](const auto& r) { return r.first == run; });
}

std::vector<LiveStats> LiveRegistry::sample() const {
  std::lock_guard lock(m_);  // a run cannot leave (and die) while it is sampled
  std::vector<LiveStats> out;
  out.reserve(runs_.size());
  for (const auto& [run, sample] : runs_) out.push_back(sample());
  return out;
}

bool LiveRegistry::ready() const {
  const auto all = sample();
  return !all.empty() && std::all_of(all.begin(), all.end(),
                                     [](const LiveStats& s) { return s.frames_written > 0; });
}

}  // namespace vpipe
