#include "vpipe/memory/strategy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "vpipe/base/errors.hpp"
#include "vpipe/memory/fence.hpp"
#include "vpipe/memory/graph_memory.hpp"
#include "vpipe/memory/pool_resource.hpp"
#include "vpipe/memory/slab_resource.hpp"
#include "vpipe/memory/vmm_arena.hpp"

namespace vpipe {

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, value] : kStrategyNames) v.emplace_back(name);
    return v;
  }();
  return names;
}

const std::vector<std::string>& compared_strategy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& n : strategy_names())
      if (n != "pool-release0") v.push_back(n);
    return v;
  }();
  return names;
}

MemoryStrategy::~MemoryStrategy() {
  stats_.reset();
  while (!layers_.empty()) layers_.pop_back();
}

MemoryStrategy make_strategy(std::string_view name, const StrategyOptions& o) {
  for (const auto& [n, value] : kStrategyNames)
    if (n == name) return make_strategy(value, o);
  throw logic_error(fmt::format("unknown memory strategy '{}' (known: {})", name,
                                fmt::join(strategy_names(), ", ")));
}

MemoryStrategy make_strategy(Strategy which, const StrategyOptions& o) {
  MemoryStrategy s;
  for (const auto& [n, value] : kStrategyNames)
    if (value == which) s.name_ = std::string(n);
  auto push = [&](std::unique_ptr<DeviceMemoryResource> r) -> DeviceMemoryResource& {
    s.layers_.push_back(std::move(r));
    return *s.layers_.back();
  };
  if (which == Strategy::kNaive) {
    push(std::make_unique<NaiveResource>());
  } else if (which == Strategy::kPool || which == Strategy::kPoolRelease0) {
    PoolOptions po;
    po.release_threshold = which == Strategy::kPool ? o.pool_release_threshold : 0;
    po.max_size = o.budget;
    push(std::make_unique<StreamOrderedPool>(po));
  } else if (which == Strategy::kVmm) {
    VmmOptions vo;
    vo.chunk_bytes = o.vmm_chunk_bytes;
    vo.max_physical = o.budget;
    push(std::make_unique<VmmArena>(vo, make_cuda_vmm_backing(vo.reserve_bytes),
                                    std::make_unique<CudaFences>()));
  } else if (which == Strategy::kSlab) {
    // Batches and one-off sizes come from cudaMalloc, under the budget too.
    auto* upstream = &push(std::make_unique<NaiveResource>());
    if (o.budget) upstream = &push(std::make_unique<BudgetAdaptor>(*upstream, *o.budget));
    SlabOptions so;
    so.batch = o.slab_batch;
    so.max_bytes = o.budget;
    push(std::make_unique<SlabResource>(*upstream, so, std::make_unique<CudaFences>()));
  } else {  // Strategy::kGraph
    GraphMemOptions go;
    go.max_bytes = o.budget;
    go.batch = o.graph_batch;
    push(std::make_unique<GraphMemResource>(go, make_cuda_graph_backing(),
                                            std::make_unique<CudaFences>()));
  }
  s.strategy_layer_ = s.layers_.size() - 1;
  // One budget rule, what a strategy holds from the device: vmm's mapped bytes,
  // slab's blocks and graph's graphs are capped natively; naive holds exactly its live bytes
  // (an adaptor counts them); pool's maxSize is not a hard cap on what it
  // reserves, so an adaptor checks its reserved bytes.
  if (o.budget && which == Strategy::kNaive)
    push(std::make_unique<BudgetAdaptor>(*s.layers_.back(), *o.budget));
  if (o.budget && (which == Strategy::kPool || which == Strategy::kPoolRelease0))
    push(std::make_unique<HeldBudgetAdaptor>(*s.layers_.back(), *o.budget));
  s.stats_ = std::make_unique<StatisticsAdaptor>(*s.layers_.back());
  return s;
}

std::size_t probe_largest_block(DeviceMemoryResource& mr, cudaStream_t stream, std::size_t hi,
                                std::size_t lo, std::size_t step) {
  auto fits = [&](std::size_t bytes) {
    try {
      void* p = mr.allocate(bytes, stream);
      mr.deallocate(p, bytes, stream);
      cudaStreamSynchronize(stream);
      return true;
    } catch (const out_of_memory&) {
      return false;
    }
  };
  if (lo > 0 && !fits(lo)) return 0;
  while (hi - lo > step) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace vpipe
