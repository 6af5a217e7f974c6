// --graphs on (issue #20): a run of CUDA filters as one stage whose work per
// frame is one CUDA Graph launch instead of a launch per kernel.
//
// The chain is captured once per configuration (input format and plane
// layout): the filters run on the stage's stream under stream capture, their
// intermediate frames and scratch buffers allocated stream-ordered inside the
// capture, so they become graph memory nodes (CUDA keeps their physical memory
// with the graph and reuses it every launch). The frame that leaves the graph
// comes from the run's --mem strategy as usual. For the next frame only the
// input and output planes move: the captured kernel, memset and memcpy nodes'
// arguments that point into them are found once (PatchSites) and rewritten in
// the instantiated graph before each launch. A node that cannot be updated in
// place makes the stage capture again (counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vpipe/pipeline/filters/cuda_stages.hpp"

namespace vpipe {

// A pointer range of a captured frame's plane: [base, base + bytes).
struct PlaneRange {
  std::uintptr_t base = 0;
  std::size_t bytes = 0;
};

// One pointer inside a captured argument: at `offset` of the argument's
// bytes, `delta` bytes into plane range `range`.
struct PatchSite {
  std::size_t offset = 0;
  std::size_t range = 0;
  std::uintptr_t delta = 0;
};

// Every pointer-aligned word of `bytes` that points into one of `ranges`
// (an address one past a range's end does not count).
[[nodiscard]] std::vector<PatchSite> find_patch_sites(std::span<const std::byte> bytes,
                                                      std::span<const PlaneRange> ranges);
// Writes each site's pointer for the new bases (one per range) into `bytes`.
void apply_patch_sites(std::span<std::byte> bytes, std::span<const PatchSite> sites,
                       std::span<const std::uintptr_t> new_bases);

// The planes of `in` then of `out`, as ranges (the order of new_bases).
[[nodiscard]] std::vector<PlaneRange> plane_ranges(const Frame& in, const Frame& out);

// Device memory allocated and freed stream-ordered (cudaMallocAsync on the
// device's default pool): under stream capture, graph memory nodes.
class GraphNodeMemory final : public DeviceMemoryResource {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "graph"; }

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
};

struct GraphStats {
  std::int64_t launches = 0, captures = 0, updates_refused = 0;
  std::string fallback;  // why the stage went back to launches (empty: it did not)
};

class CudaGraphStage final : public Stage<Frame, Frame> {
 public:
  // `stream` runs the work and owns the frames; `capture_stream` is the stage's
  // alone: other threads enqueue on `stream` (a reader's release of a frame
  // makes it wait), which must not land in a capture.
  CudaGraphStage(std::vector<ConfiguredFilter> filters, DeviceMemoryResource& mr,
                 cudaStream_t stream, cudaStream_t capture_stream);
  ~CudaGraphStage() override;
  CudaGraphStage(const CudaGraphStage&) = delete;
  CudaGraphStage& operator=(const CudaGraphStage&) = delete;
  [[nodiscard]] std::string name() const override;
  Flow process(Frame in, Output<Frame>& out) override;
  [[nodiscard]] GraphStats stats() const noexcept { return stats_; }
  [[nodiscard]] std::optional<double> gpu_ms_per_item() const override { return gpu_.mean_ms(); }
  CudaRunEnd& end() noexcept { return end_; }

 private:
  struct Captured;  // the instantiated graph and its patch sites (cuda_graph.cpp)
  void capture(const std::vector<ConfiguredFilter*>& steps, const Frame& in, Frame& result);
  bool update(const Frame& in, const Frame& result);  // false: a node refused
  std::vector<ConfiguredFilter> filters_;
  DeviceMemoryResource& mr_;
  cudaStream_t stream_, capture_stream_;
  GraphNodeMemory graph_memory_;  // before captured_: the graph's nodes came from it
  std::unique_ptr<Captured> captured_;
  std::optional<Frame> warm_;  // the layout (no memory) of the last frame run without a graph
  GraphStats stats_;
  GpuTimer gpu_;
  CudaRunEnd end_;
};

}  // namespace vpipe
