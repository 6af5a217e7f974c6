#include "vpipe/memory/graph_memory.hpp"

#include <fmt/format.h>

#include <bit>
#include <string>

#include "vpipe/base/errors.hpp"

namespace vpipe {

// ---- the CUDA graphs ----------------------------------------------------------

namespace {

// Every call into the driver's graph memory goes through one lock per backing.
// On the H200 (driver 580), cudaFreeAsync of a graph allocation on one thread
// while other threads created, launched, destroyed graphs with memory nodes and
// trimmed the graph pool crashed inside libcuda (SIGSEGV in cuMemFreeAsync, 24 of
// 50 starts of soak --mem graph --workload roi at a5d5cd7). The calls are short
// and asynchronous (no host wait happens under the lock: a launch and a free
// enqueue), so the lock costs a few µs where a graph is launched per buffer anyway.
class CudaGraphBacking final : public GraphAllocBacking {
 public:
  explicit CudaGraphBacking(int device) : device_(device) {
    if (device_ < 0) VPIPE_CUDA_TRY(cudaGetDevice(&device_));
  }

  Node create(std::size_t bytes) override {
    std::lock_guard lock(driver_);
    cudaGraph_t graph = nullptr;
    VPIPE_CUDA_TRY(cudaGraphCreate(&graph, 0));
    cudaMemAllocNodeParams p{};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = device_;
    p.bytesize = bytes;
    cudaGraphNode_t node = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t s = cudaGraphAddMemAllocNode(&node, graph, nullptr, 0, &p);
    if (s == cudaSuccess) s = cudaGraphInstantiate(&exec, graph, 0);
    if (s != cudaSuccess) {
      cudaGraphDestroy(graph);
      VPIPE_CUDA_TRY(s);
    }
    return {graph, exec, p.dptr};
  }

  void launch(const Node& n, cudaStream_t stream) override {
    std::lock_guard lock(driver_);
    VPIPE_CUDA_TRY(cudaGraphLaunch(static_cast<cudaGraphExec_t>(n.exec), stream));
  }

  void free(const Node& n, cudaStream_t stream) noexcept override {
    std::lock_guard lock(driver_);
    (void)cudaFreeAsync(n.ptr, stream);
  }

  void destroy(const Node& n) noexcept override {
    std::lock_guard lock(driver_);
    cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(n.exec));
    cudaGraphDestroy(static_cast<cudaGraph_t>(n.graph));
  }

  void trim() noexcept override {
    std::lock_guard lock(driver_);
    (void)cudaDeviceGraphMemTrim(device_);
  }

 private:
  int device_;
  std::mutex driver_;
};

std::size_t round_up(std::size_t bytes, std::size_t step) {
  return (bytes + step - 1) / step * step;
}

}  // namespace

std::size_t graph_size_class(std::size_t bytes) {
  constexpr std::size_t a = DeviceMemoryResource::kAlignment;
  const std::size_t aligned = round_up(std::max<std::size_t>(bytes, 1), a);
  if (aligned <= 64 * 1024) return aligned;
  // 8 classes per power of two: the step is 1/8 of the size's highest power of two.
  const std::size_t top = std::size_t{1} << (std::bit_width(aligned) - 1);
  return round_up(aligned, std::max(a, top / 8));
}

std::unique_ptr<GraphAllocBacking> make_cuda_graph_backing(int device) {
  return std::make_unique<CudaGraphBacking>(device);
}

// ---- the strategy ---------------------------------------------------------------

GraphMemResource::GraphMemResource(GraphMemOptions options,
                                   std::unique_ptr<GraphAllocBacking> backing,
                                   std::unique_ptr<FenceSource> fences)
    : options_(options), backing_(std::move(backing)), fences_(std::move(fences)) {}

GraphMemResource::~GraphMemResource() {
  std::vector<Idle> all;
  {
    std::lock_guard lock(mutex_);
    while (auto g = pop_oldest(std::nullopt)) all.push_back(*g);
  }
  destroy(all);
  // Graphs still live belong to buffers never freed: their addresses stay valid.
}

void* GraphMemResource::do_allocate(std::size_t bytes, cudaStream_t stream) {
  const std::size_t size = graph_size_class(bytes);
  Idle g = take_or_create(size);
  try {
    launch(g, stream);
  } catch (const out_of_memory&) {
    // The device's graph pool is short: idle graphs of other sizes give theirs back, once.
    std::vector<Idle> victims;
    {
      std::lock_guard lock(mutex_);
      while (auto v = pop_oldest(size)) victims.push_back(*v);
    }
    destroy(victims);
    try {
      launch(g, stream);
    } catch (...) {
      park(g);
      throw;
    }
  } catch (...) {
    park(g);
    throw;
  }
  std::lock_guard lock(mutex_);
  live_[g.node.ptr] = Live{g.node, size};
  live_bytes_ += size;
  return g.node.ptr;
}

GraphMemResource::Idle GraphMemResource::take_or_create(std::size_t size) {
  std::vector<Idle> victims;
  std::string refusal;
  {
    std::lock_guard lock(mutex_);
    if (auto it = idle_.find(size); it != idle_.end() && !it->second.empty()) {
      Idle g = it->second.front();
      it->second.pop_front();
      --idle_count_;
      return g;
    }
    // Under a budget, idle graphs of other sizes make room first.
    while (options_.max_bytes && held_bytes_ + size > *options_.max_bytes) {
      auto v = pop_oldest(size);
      if (!v) break;
      victims.push_back(*v);
    }
    if (options_.max_bytes && held_bytes_ + size > *options_.max_bytes)
      refusal = fmt::format(
          "graph: {} B more would hold {} B in graphs, over the budget of {} B ({} B live)", size,
          held_bytes_ + size, *options_.max_bytes, live_bytes_);
    else
      held_bytes_ += size;  // counted before it exists: the budget holds across threads
  }
  destroy(victims);
  if (!refusal.empty()) throw out_of_memory(refusal);
  Idle g = create_held(size);
  add_spares(size);
  return g;
}

void GraphMemResource::add_spares(std::size_t size) {
  for (std::size_t i = 1; i < options_.batch; ++i) {
    {
      std::lock_guard lock(mutex_);
      if ((options_.max_bytes && held_bytes_ + size > *options_.max_bytes) ||
          idle_count_ + 1 > options_.max_idle)
        return;
      held_bytes_ += size;
    }
    try {
      park(create_held(size));
    } catch (...) {
      return;  // a spare is optional: the request itself was served
    }
  }
}

GraphMemResource::Idle GraphMemResource::create_held(std::size_t size) {
  try {
    Idle g{backing_->create(size), size, std::nullopt, nullptr, 0};
    std::lock_guard lock(mutex_);
    ++created_;
    if (holds_address(g.node.ptr))  // live_ is keyed by address: two graphs must not share one
      throw logic_error(fmt::format(
          "graph: a new graph's allocation has the address {} of a graph still held", g.node.ptr));
    return g;
  } catch (...) {
    std::lock_guard lock(mutex_);
    held_bytes_ -= size;
    throw;
  }
}

void GraphMemResource::launch(Idle& g, cudaStream_t stream) {
  if (g.fence && g.freed_on != stream) fences_->order_after(*g.fence, stream);
  backing_->launch(g.node, stream);
  if (g.fence) fences_->release(*g.fence);
  g.fence.reset();
}

void GraphMemResource::park(Idle g) {
  std::lock_guard lock(mutex_);
  g.order = ++clock_;
  idle_[g.bytes].push_back(g);
  ++idle_count_;
}

void GraphMemResource::do_deallocate(void* ptr, std::size_t, cudaStream_t stream) noexcept {
  Live l{};
  {
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;  // not ours: a caller's bug, never a crash here
    l = it->second;
    live_.erase(it);
    live_bytes_ -= l.bytes;
  }
  backing_->free(l.node, stream);
  std::optional<FenceId> fence;
  try {
    fence = fences_->record(stream);
  } catch (...) {
    fence.reset();  // no fence: the stream is synchronized before a launch elsewhere
    cudaStreamSynchronize(stream);
  }
  std::vector<Idle> victims;
  {
    std::lock_guard lock(mutex_);
    idle_[l.bytes].push_back(Idle{l.node, l.bytes, fence, stream, ++clock_});
    ++idle_count_;
    while (idle_count_ > options_.max_idle) {
      auto v = pop_oldest(std::nullopt);
      if (!v) break;
      victims.push_back(*v);
    }
  }
  destroy(victims);
}

bool GraphMemResource::holds_address(void* ptr) const {
  if (live_.contains(ptr)) return true;
  for (const auto& [bytes, list] : idle_)
    for (const auto& g : list)
      if (g.node.ptr == ptr) return true;
  return false;
}

std::optional<GraphMemResource::Idle> GraphMemResource::pop_oldest(
    std::optional<std::size_t> keep) {
  std::deque<Idle>* oldest = nullptr;
  for (auto& [bytes, list] : idle_)
    if (!list.empty() && bytes != keep && (!oldest || list.front().order < oldest->front().order))
      oldest = &list;
  if (!oldest) return std::nullopt;
  Idle g = oldest->front();
  oldest->pop_front();
  --idle_count_;
  held_bytes_ -= g.bytes;  // it is on its way to destroy()
  return g;
}

void GraphMemResource::destroy(std::vector<Idle>& victims) noexcept {
  if (victims.empty()) return;
  for (Idle& g : victims) {
    if (g.fence) {
      fences_->wait(*g.fence);
      fences_->release(*g.fence);
    }
    backing_->destroy(g.node);
  }
  victims.clear();
  backing_->trim();  // the graph pool keeps freed physical memory until trimmed
}

void GraphMemResource::trim() {
  std::vector<Idle> all;
  {
    std::lock_guard lock(mutex_);
    while (auto g = pop_oldest(std::nullopt)) all.push_back(*g);
  }
  if (all.empty()) backing_->trim();
  destroy(all);
}

ResourceUsage GraphMemResource::usage() const {
  std::lock_guard lock(mutex_);
  ResourceUsage u;
  u.reserved = held_bytes_;
  u.used = live_bytes_;
  u.free_bytes = held_bytes_ - live_bytes_;
  std::size_t largest = 0;  // an idle graph serves its own size only
  for (const auto& [bytes, list] : idle_)
    if (!list.empty()) largest = bytes;
  u.largest_free = largest;
  return u;
}

std::size_t GraphMemResource::graphs_created() const {
  std::lock_guard lock(mutex_);
  return created_;
}

std::size_t GraphMemResource::graphs_held() const {
  std::lock_guard lock(mutex_);
  return live_.size() + idle_count_;
}

}  // namespace vpipe
