// `graph`: every buffer is a CUDA Graph memory node (issue #20's fifth strategy).
//
// A size class (graph_size_class) gets instantiated graphs of one allocation node each
// (cudaGraphAddMemAllocNode), whose address is fixed for the graph's life.
// allocate launches an idle graph of that size on the stream and hands out its
// address; deallocate frees it stream-ordered (cudaFreeAsync takes graph
// allocations), after which the graph may be launched again. CUDA backs the
// addresses from the device's graph memory pool and keeps the physical memory
// across relaunches (cudaDeviceGraphMemTrim gives it back). A graph whose
// allocation is live cannot be launched again, so a size has as many graphs
// as it has buffers live at once: grown on demand, like slab's blocks.
//
// Stream rule: a graph is relaunched on the stream that freed it at once
// (stream order); on another stream after the fence recorded at the free.
// Budget: the bytes of every graph held (live or idle) stay under
// `max_bytes`; to grow past it, idle graphs of other sizes are destroyed
// first, then the allocation fails loudly. At most `max_idle` idle graphs are
// kept (the least recently freed go first), so a probe of many sizes does
// not leave a graph per size behind.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "vpipe/memory/device_resource.hpp"
#include "vpipe/memory/fence.hpp"

namespace vpipe {

// The graphs themselves; the CUDA one is make_cuda_graph_backing().
class GraphAllocBacking {
 public:
  struct Node {
    void* graph = nullptr;  // the graph (cudaGraph_t): it reserved the address
    void* exec = nullptr;   // its one instantiation (cudaGraphExec_t)
    void* ptr = nullptr;    // the allocation's fixed address
  };
  virtual ~GraphAllocBacking() = default;
  virtual Node create(std::size_t bytes) = 0;                      // throws out_of_memory
  virtual void launch(const Node& node, cudaStream_t stream) = 0;  // throws out_of_memory
  virtual void free(const Node& node, cudaStream_t stream) noexcept = 0;
  virtual void destroy(const Node& node) noexcept = 0;  // an idle graph, its free enqueued
  virtual void trim() noexcept {}                       // unused physical memory back
};

[[nodiscard]] std::unique_ptr<GraphAllocBacking> make_cuda_graph_backing(int device = -1);

// The bytes a graph of a request holds: 256-byte aligned, and above 64 KiB rounded
// up to one of 8 classes per power of two (at most 12.5 % more). Varying sizes (a
// soak's roi workload: a new size nearly every frame) then reuse idle graphs instead
// of creating and destroying one per buffer.
[[nodiscard]] std::size_t graph_size_class(std::size_t bytes);

struct GraphMemOptions {
  std::optional<std::size_t> max_bytes;  // budget on the bytes of the graphs held
  std::size_t max_idle = 64;
  // Graphs made when a size has none idle: the one asked for and batch - 1 idle spares
  // (within the budget and max_idle), as slab grows by batches. One at a time, a
  // pipeline's reserved memory kept stepping up at each new peak of frames in flight
  // (a 5-s soak failed its verdict on it, +12.9 %, on the H200 at c4c8be3).
  std::size_t batch = 1;
};

class GraphMemResource final : public DeviceMemoryResource {
 public:
  GraphMemResource(GraphMemOptions options, std::unique_ptr<GraphAllocBacking> backing,
                   std::unique_ptr<FenceSource> fences);
  ~GraphMemResource() override;
  [[nodiscard]] std::string_view name() const noexcept override { return "graph"; }
  [[nodiscard]] ResourceUsage usage() const override;
  void trim() override;  // destroys every idle graph, then gives the pool's memory back

  [[nodiscard]] std::size_t graphs_created() const;
  [[nodiscard]] std::size_t graphs_held() const;

 private:
  struct Idle {
    GraphAllocBacking::Node node;
    std::size_t bytes;
    std::optional<FenceId> fence;  // recorded where the free was
    cudaStream_t freed_on;
    std::uint64_t order;  // when it went idle (eviction: the oldest first)
  };
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  struct Live {
    GraphAllocBacking::Node node;
    std::size_t bytes;
  };
  // An idle graph of `bytes` taken out of the free lists, or a new one (its
  // bytes counted as held before it is created, outside the lock).
  Idle take_or_create(std::size_t bytes);
  Idle create_held(std::size_t bytes);  // its bytes already counted as held; uncounted on failure
  void add_spares(std::size_t bytes);   // options_.batch - 1 idle graphs of `bytes`, if they fit
  void launch(Idle& g, cudaStream_t stream);
  void park(Idle g);  // back to the idle lists (a launch that failed)
  // Takes the oldest idle graph not of size `keep` out of the lists and the
  // held bytes, for destroy() (nullopt: none).
  std::optional<Idle> pop_oldest(std::optional<std::size_t> keep);
  // Outside the lock: waits for their fences, destroys them, trims the pool.
  void destroy(std::vector<Idle>& victims) noexcept;
  [[nodiscard]] bool holds_address(void* ptr) const;  // under the lock: live or idle

  GraphMemOptions options_;
  std::unique_ptr<GraphAllocBacking> backing_;
  std::unique_ptr<FenceSource> fences_;
  mutable std::mutex mutex_;
  std::map<std::size_t, std::deque<Idle>> idle_;  // bytes → idle graphs, oldest freed first
  std::unordered_map<void*, Live> live_;
  std::size_t held_bytes_ = 0, live_bytes_ = 0, idle_count_ = 0, created_ = 0;
  std::uint64_t clock_ = 0;
};

}  // namespace vpipe
