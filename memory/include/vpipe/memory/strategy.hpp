// Strategies by name (`--mem naive|pool|vmm|slab|graph`), each as a stack of
// resources: the strategy, its budget where it has no native cap, and the
// statistics adaptor on top. An unknown name is an error, never a fallback.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vpipe/memory/adaptors.hpp"
#include "vpipe/memory/device_resource.hpp"

namespace vpipe {

// The device memory strategies a run picks from (--mem, a config's `mem`).
enum class Strategy { kNaive, kPool, kPoolRelease0, kVmm, kSlab, kGraph };
// Their names, the one table: options, reports and strategy_names() read it.
inline constexpr std::array<std::pair<std::string_view, Strategy>, 6> kStrategyNames{{
    {"naive", Strategy::kNaive},
    {"pool", Strategy::kPool},
    {"pool-release0", Strategy::kPoolRelease0},
    {"vmm", Strategy::kVmm},
    {"slab", Strategy::kSlab},
    {"graph", Strategy::kGraph},
}};

struct StrategyOptions {
  std::optional<std::size_t> budget;  // bytes the strategy may take from the device
  std::uint64_t pool_release_threshold = UINT64_MAX;
  std::size_t vmm_chunk_bytes = 0;  // 0: the allocation granularity
  std::size_t slab_batch = 4;
  std::size_t graph_batch = 4;  // graphs made per miss of a size (GraphMemOptions::batch)
};

class MemoryStrategy {
 public:
  MemoryStrategy() = default;
  MemoryStrategy(MemoryStrategy&&) noexcept = default;
  MemoryStrategy& operator=(MemoryStrategy&&) = delete;
  // Top first: a layer's upstream must outlive it (the slab frees its
  // batches into cudaMalloc's resource when it goes).
  ~MemoryStrategy();

  [[nodiscard]] DeviceMemoryResource& resource() noexcept { return *stats_; }
  [[nodiscard]] StatisticsAdaptor& stats() noexcept { return *stats_; }
  // The strategy itself, below the adaptors (for usage() and trim()).
  [[nodiscard]] DeviceMemoryResource& strategy() noexcept { return *layers_.at(strategy_layer_); }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  friend MemoryStrategy make_strategy(Strategy, const StrategyOptions&);
  std::string name_;
  std::vector<std::unique_ptr<DeviceMemoryResource>> layers_;  // bottom first
  std::size_t strategy_layer_ = 0;
  std::unique_ptr<StatisticsAdaptor> stats_;
};

// naive | pool | pool-release0 (release threshold 0) | vmm | slab | graph.
[[nodiscard]] MemoryStrategy make_strategy(Strategy strategy, const StrategyOptions& options = {});
// The same by name (kStrategyNames); throws logic_error for any other name.
[[nodiscard]] MemoryStrategy make_strategy(std::string_view name,
                                           const StrategyOptions& options = {});
[[nodiscard]] const std::vector<std::string>& strategy_names();
// The strategies the benches and soak compare by default: every one but the
// pool-release0 variant, which exists to show the trim trap.
[[nodiscard]] const std::vector<std::string>& compared_strategy_names();

// Largest block `mr` can hand out now, by binary search between `lo` and
// `hi` bytes to `step` precision (each probe allocates and frees on `stream`,
// then synchronizes it). For periodic, low-rate use.
[[nodiscard]] std::size_t probe_largest_block(DeviceMemoryResource& mr, cudaStream_t stream,
                                              std::size_t hi, std::size_t lo = 0,
                                              std::size_t step = 1u << 20);

}  // namespace vpipe
