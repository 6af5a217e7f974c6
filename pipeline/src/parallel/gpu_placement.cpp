#include "vpipe/pipeline/parallel/gpu_placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <tuple>

#include "vpipe/base/errors.hpp"

namespace vpipe {

namespace {
std::optional<int> integer(std::string_view s) {
  int v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}
}  // namespace

std::vector<int> parse_gpus(std::string_view text, int visible) {
  if (visible < 1) throw usage_error(fmt::format("{}: no CUDA device is visible", text));
  std::vector<int> out;
  if (text == "all") {
    for (int d = 0; d < visible; ++d) out.push_back(d);
    return out;
  }
  if (text.find(',') == std::string_view::npos) {  // a count
    const auto n = integer(text);
    if (!n || *n < 1 || *n > visible)
      throw usage_error(fmt::format("{}: expected all, a count from 1 to {}, or a list such as 0,1",
                                    text, visible));
    for (int d = 0; d < *n; ++d) out.push_back(d);
    return out;
  }
  std::set<int> seen;
  for (std::size_t at = 0; at < text.size();) {
    const auto end = std::min(text.find(',', at), text.size());
    const auto item = text.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;  // "1," is a one-device list
    const auto d = integer(item);
    if (!d || *d < 0 || *d >= visible)
      throw usage_error(
          fmt::format("{}: '{}' is not a visible device (0 to {})", text, item, visible - 1));
    if (!seen.insert(*d).second)
      throw usage_error(fmt::format("{}: device {} is listed twice", text, *d));
    out.push_back(*d);
  }
  if (out.empty()) throw usage_error(fmt::format("{}: no device listed", text));
  return out;
}

std::size_t place_stream(const std::vector<GpuLoad>& gpus) {
  std::optional<std::size_t> best;
  auto key = [&](const GpuLoad& g) {
    const double engines = 1.0 - static_cast<double>(g.streams) / std::max(1, g.engines);
    const double memory =
        1.0 - static_cast<double>(g.memory_used) / static_cast<double>(g.memory_budget);
    return std::make_tuple(std::min(engines, memory), g.fps_per_stream);
  };
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].memory_budget == 0) continue;  // out of service
    if (!best || key(gpus[i]) > key(gpus[*best])) best = i;
  }
  if (!best) throw input_error("no GPU can take another stream (every GPU is out of service)");
  return *best;
}

std::optional<std::size_t> move_stream(std::vector<GpuLoad>& gpus, std::size_t failed) {
  auto& bad = gpus.at(failed);
  bad.memory_budget = 0;
  bad.streams = std::max(0, bad.streams - 1);
  const bool any =
      std::any_of(gpus.begin(), gpus.end(), [](const GpuLoad& g) { return g.memory_budget > 0; });
  if (!any) return std::nullopt;
  const std::size_t k = place_stream(gpus);
  ++gpus[k].streams;
  return k;
}

int GpuPlacer::place() {
  std::lock_guard lock(mutex_);
  const std::size_t k = place_stream(gpus_);
  ++gpus_[k].streams;
  return gpus_[k].device;
}

void GpuPlacer::release(int device) {
  std::lock_guard lock(mutex_);
  auto& g = gpus_[index_of(device)];
  g.streams = std::max(0, g.streams - 1);
}

std::optional<int> GpuPlacer::move_from(int device) {
  std::lock_guard lock(mutex_);
  const auto to = move_stream(gpus_, index_of(device));
  return to ? std::optional<int>(gpus_[*to].device) : std::nullopt;
}

std::vector<GpuLoad> GpuPlacer::loads() const {
  std::lock_guard lock(mutex_);
  return gpus_;
}

std::size_t GpuPlacer::index_of(int device) const {
  for (std::size_t i = 0; i < gpus_.size(); ++i)
    if (gpus_[i].device == device) return i;
  throw logic_error(fmt::format("GPU {} is not one of this run's", device));
}

}  // namespace vpipe
