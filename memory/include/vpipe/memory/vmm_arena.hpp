// `vmm`: an arena on CUDA's virtual memory management API.
//
// It reserves one large virtual address range once (cuMemAddressReserve) and
// backs it with physical chunks on demand (cuMemCreate + cuMemMap +
// cuMemSetAccess), by default of the allocation granularity (2 MiB on the
// H200): under a budget, free pages anywhere are unmapped and mapped again
// where a request lands, so the budget is lost only to partly used pages
// (20 MiB chunks lost up to 20 MiB of it and failed ladders at 1.3x the live
// set; issue #25). Blocks are sub-allocated from a coalescing free list over the
// range, placed where they need the fewest newly mapped bytes, then in the
// smallest free block that fits (best fit), then lowest address: first fit
// alone let mixed frame sizes (NV12 in, RGB between filters, NV12 out) spill
// into fresh chunks while holes of the wrong size sat in mapped ones — the
// H200 soak saw the arena grow one chunk after warm-up on a constant workload. Chunks that no block
// touches any more stay mapped as a cache and are unmapped (their physical memory released) by
// trim(), or at once when mapping another chunk would exceed the physical budget. Because any
// physical chunk can be mapped at any address, the arena never needs one contiguous physical
// region: fragmentation costs it at most a partially used chunk.
//
// Stream rule: deallocate(ptr, bytes, stream) records a fence on `stream`; the
// block returns to the free list only once that fence is ready, so a later
// allocation on any stream never races the freeing stream's work. When the
// free list can't serve a request, the arena waits on pending fences first.
// An allocation on the freeing stream itself needs no fence: a pending block of
// the same size freed there is handed back at once (stream order), so a stage
// that frees and allocates frames on its own stream makes no CUDA call.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "vpipe/memory/device_resource.hpp"
#include "vpipe/memory/fence.hpp"
#include "vpipe/memory/free_list.hpp"

namespace vpipe {

// Physical backing of the reserved range; the CUDA one is make_cuda_vmm_backing().
class VmmBacking {
 public:
  virtual ~VmmBacking() = default;
  [[nodiscard]] virtual std::byte* base() const noexcept = 0;
  [[nodiscard]] virtual std::size_t reserved_bytes() const noexcept = 0;
  [[nodiscard]] virtual std::size_t granularity() const noexcept = 0;
  virtual void map(std::size_t offset, std::size_t bytes) = 0;  // throws out_of_memory
  virtual void unmap(std::size_t offset, std::size_t bytes) noexcept = 0;
};

// Reserves `reserve_bytes` of address space on `device` (-1: current).
[[nodiscard]] std::unique_ptr<VmmBacking> make_cuda_vmm_backing(std::size_t reserve_bytes,
                                                                int device = -1);

struct VmmOptions {
  std::size_t chunk_bytes = 0;               // rounded up to the granularity (0: one page of it)
  std::size_t reserve_bytes = 256ull << 30;  // virtual, costs no memory
  std::optional<std::size_t> max_physical;   // budget on mapped bytes
};

class VmmArena final : public DeviceMemoryResource {
 public:
  VmmArena(VmmOptions options, std::unique_ptr<VmmBacking> backing,
           std::unique_ptr<FenceSource> fences);
  ~VmmArena() override;
  [[nodiscard]] std::string_view name() const noexcept override { return "vmm"; }
  [[nodiscard]] ResourceUsage usage() const override;
  void trim() override;  // unmap every chunk no block touches

  [[nodiscard]] std::size_t chunk_bytes() const noexcept { return chunk_; }
  [[nodiscard]] std::size_t mapped_bytes() const;
  [[nodiscard]] std::size_t map_calls() const;
  [[nodiscard]] std::size_t unmap_calls() const;

 private:
  struct Pending {
    std::size_t offset, bytes;
    FenceId fence;
    cudaStream_t stream;  // fences of one stream complete in the order recorded
  };
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  // A pending block of `size` freed on `stream` (its offset), taken back whole.
  std::optional<std::size_t> reuse_on_stream(std::size_t size, cudaStream_t stream);
  void reclaim_ready();  // pending whose fence is done → free list
  // Every pending free → free list, waiting for their fences with the lock
  // released (taken out of pending_ first, so no other thread touches them):
  // one stream's backlog never stalls another thread's deallocate.
  void reclaim_all(std::unique_lock<std::mutex>& lock);
  void give_back(std::size_t offset, std::size_t bytes);
  // Unmaps idle chunks outside [keep_first, keep_last]; returns the bytes unmapped.
  std::size_t unmap_idle_chunks(std::size_t at_least, std::size_t keep_first,
                                std::size_t keep_last);
  [[nodiscard]] std::size_t block_bytes(std::size_t bytes) const;
  // Where a block of `size` goes (see the header comment); nullopt if nowhere.
  [[nodiscard]] std::optional<std::size_t> place(std::size_t size) const;
  [[nodiscard]] std::size_t unmapped_in(std::size_t offset, std::size_t size) const;

  VmmOptions options_;
  std::unique_ptr<VmmBacking> backing_;
  std::unique_ptr<FenceSource> fences_;
  std::size_t chunk_;
  mutable std::mutex mutex_;
  FreeList free_;
  std::vector<std::uint32_t> chunk_users_;  // blocks (live or pending) touching each chunk
  std::vector<bool> chunk_mapped_;
  std::vector<Pending> pending_;
  std::vector<cudaStream_t> behind_;  // reclaim_ready's scratch: no allocation per call
  std::size_t mapped_ = 0, used_ = 0, maps_ = 0, unmaps_ = 0;
};

}  // namespace vpipe
