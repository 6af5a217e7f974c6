// vpipe_microbench: Google Benchmark micro-benchmarks of the memory
// strategies' host-side bookkeeping, which runs on every allocate inside the
// pipeline: the free list, the vmm arena's placement over 2 MiB pages against
// 20 MiB chunks, the slab, and the budget adaptors. No GPU: the physical
// backing and the fences are host stand-ins, so these isolate the CPU cost
// from the driver's (`vpipe bench mem` measures the whole call on a GPU).
//   build/bin/vpipe_microbench [--benchmark_filter=Vmm] [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "vpipe/memory/adaptors.hpp"
#include "vpipe/memory/fence.hpp"
#include "vpipe/memory/free_list.hpp"
#include "vpipe/memory/slab_resource.hpp"
#include "vpipe/memory/vmm_arena.hpp"

namespace {

using vpipe::DeviceMemoryResource;
constexpr std::size_t MiB = 1u << 20;

// Address space with no memory behind it: mapping is bookkeeping only.
class HostBacking final : public vpipe::VmmBacking {
 public:
  std::byte* base() const noexcept override {
    return reinterpret_cast<std::byte*>(0x7f0000000000ull);
  }
  std::size_t reserved_bytes() const noexcept override { return 64ull << 30; }
  std::size_t granularity() const noexcept override { return 2 * MiB; }
  void map(std::size_t, std::size_t) override {}
  void unmap(std::size_t, std::size_t) noexcept override {}
};

// Hands out distinct fake addresses: the slab's upstream, bookkeeping only.
class HostUpstream final : public DeviceMemoryResource {
 public:
  std::string_view name() const noexcept override { return "host"; }

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t) override {
    next_ += (bytes + 255) / 256 * 256;
    return reinterpret_cast<void*>(next_);
  }
  void do_deallocate(void*, std::size_t, cudaStream_t) noexcept override {}
  std::uintptr_t next_ = 0x10000;
};

// A pipeline's frame set: 1080p NV12 in, RGB between filters, 720p NV12 out.
const std::size_t kFrame[] = {1920 * 1080 * 3 / 2, 1920 * 1080 * 3, 1280 * 720 * 3 / 2};

// Frames in flight, freed oldest first, their fences done a frame later.
void frames_through(benchmark::State& state, DeviceMemoryResource& mr,
                    vpipe::ManualFences* fences) {
  std::vector<std::vector<void*>> in_flight;
  for (auto _ : state) {
    std::vector<void*> frame;
    for (std::size_t bytes : kFrame) frame.push_back(mr.allocate(bytes, nullptr));
    in_flight.push_back(std::move(frame));
    if (in_flight.size() > 8) {
      for (std::size_t k = 0; k < 3; ++k) mr.deallocate(in_flight.front()[k], kFrame[k], nullptr);
      in_flight.erase(in_flight.begin());
    }
    if (fences) fences->complete_all();
  }
  for (auto& frame : in_flight)
    for (std::size_t k = 0; k < 3; ++k) mr.deallocate(frame[k], kFrame[k], nullptr);
  state.SetItemsProcessed(state.iterations() * 3);  // allocations
}

void FreeListFirstFit(benchmark::State& state) {
  vpipe::FreeList list(1ull << 34);
  std::vector<std::pair<std::size_t, std::size_t>> live;
  for (auto _ : state) {
    for (std::size_t bytes : kFrame) live.emplace_back(*list.allocate(bytes, 256), bytes);
    if (live.size() > 24) {
      for (int k = 0; k < 3; ++k)
        list.free(live[static_cast<std::size_t>(k)].first,
                  live[static_cast<std::size_t>(k)].second);
      live.erase(live.begin(), live.begin() + 3);
    }
  }
  state.SetItemsProcessed(state.iterations() * 3);
}
BENCHMARK(FreeListFirstFit);

// The arena's placement and page bookkeeping per allocate, by page size
// (state.range(0) MiB: 2, the default since issue #25, or the old 20).
void VmmArenaFrames(benchmark::State& state) {
  auto fences = std::make_unique<vpipe::ManualFences>();
  auto* f = fences.get();
  vpipe::VmmOptions o;
  o.chunk_bytes = static_cast<std::size_t>(state.range(0)) * MiB;
  o.reserve_bytes = 64ull << 30;
  vpipe::VmmArena arena(o, std::make_unique<HostBacking>(), std::move(fences));
  frames_through(state, arena, f);
}
BENCHMARK(VmmArenaFrames)->Arg(2)->Arg(20);

void SlabFrames(benchmark::State& state) {
  HostUpstream up;
  auto fences = std::make_unique<vpipe::ManualFences>();
  auto* f = fences.get();
  vpipe::SlabResource slab(up, {}, std::move(fences));
  frames_through(state, slab, f);
}
BENCHMARK(SlabFrames);

// What the statistics and budget layers add on top of the slab.
void SlabUnderAdaptors(benchmark::State& state) {
  HostUpstream up;
  auto fences = std::make_unique<vpipe::ManualFences>();
  auto* f = fences.get();
  vpipe::SlabResource slab(up, {}, std::move(fences));
  vpipe::BudgetAdaptor budget(slab, 1ull << 34);
  vpipe::StatisticsAdaptor stats(budget);
  frames_through(state, stats, f);
}
BENCHMARK(SlabUnderAdaptors);

}  // namespace

BENCHMARK_MAIN();
