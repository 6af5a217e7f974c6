// `slab`: recycled fixed-size blocks, what FFmpeg's and GStreamer's buffer
// pools do for frames of one size.
//
// A size (rounded to 256 B) requested `min_repeats` times gets a size class,
// up to max_classes: frames recur, one-off sizes (a probe, a header) go
// upstream and never pin a batch. A class grows in batches of `batch` blocks, each batch one
// upstream allocation; under `max_bytes`, one block at a time (so that every
// idle block, of any size, can be given back). When a class can't grow, the
// idle blocks of other classes are returned upstream first (their fences waited for and their
// memory freed outside the slab's lock, as RMM waits on streams); if that is not enough the
// allocation fails loudly (out_of_memory, with the class, its blocks and the cap). When every class
// slot is taken, a class with no block in use is evicted for a recurring new size; other sizes go
// to the upstream resource untouched (and when upstream refuses, idle batches are returned and the
// call is retried once).
//
// Stream rule: stream-ordered reuse, as cudaMallocAsync and RMM do. The
// oldest freed block of the class is handed out at once: freed on the
// allocating stream, stream order already puts the new work after the old;
// freed on another stream, the allocating stream waits (on the device) for the
// fence recorded there. The host never waits in allocate, and the slab grows
// only when every block is held by a live frame.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <vector>

#include "vpipe/memory/device_resource.hpp"
#include "vpipe/memory/fence.hpp"

namespace vpipe {

struct SlabOptions {
  std::size_t batch = 4;                 // blocks per upstream allocation
  std::optional<std::size_t> max_bytes;  // hard cap over every class
  int max_classes = 8;
  int min_repeats = 2;  // requests of a size before it gets a class
};

class SlabResource final : public DeviceMemoryResource {
 public:
  SlabResource(DeviceMemoryResource& upstream, SlabOptions options,
               std::unique_ptr<FenceSource> fences);
  ~SlabResource() override;
  [[nodiscard]] std::string_view name() const noexcept override { return "slab"; }
  [[nodiscard]] ResourceUsage usage() const override;
  void trim() override;  // returns every fully free batch upstream

  [[nodiscard]] std::size_t class_count() const;
  [[nodiscard]] std::size_t upstream_allocations() const;
  [[nodiscard]] std::size_t passthrough_allocations() const;
  [[nodiscard]] std::size_t exhaustions() const;

 private:
  struct Batch {
    std::byte* base;
    std::size_t block_bytes;
    std::size_t blocks;
    std::size_t free_blocks = 0;  // of which are in the class's free deque
  };
  struct FreeBlock {
    std::byte* ptr;
    std::optional<FenceId> fence;  // nullopt: never used, ready
    cudaStream_t freed_on = nullptr;
  };
  struct SizeClass {
    std::size_t block_bytes;
    std::deque<FreeBlock> free;  // oldest freed first
    std::size_t blocks = 0;      // total, free or not
  };
  // A fully free batch taken off the books under the lock, given back upstream without it.
  struct Detached {
    std::byte* base;
    std::size_t bytes;
    std::vector<FenceId> fences;  // its blocks' frees, waited for before it goes
  };
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  // One try under the lock: a block, or nullptr when idle batches had to be detached
  // into *room first (room null: nothing may be detached; the try succeeds or throws).
  void* take(std::size_t bytes, cudaStream_t stream, bool first_try, std::vector<Detached>* room);
  // The class of `size`, made (evicting an idle class into *room when every slot is
  // taken) once the size recurs; nullptr: the size goes upstream.
  SizeClass* class_for(std::size_t size, bool first_try, std::vector<Detached>* room);
  bool grow(SizeClass& c, cudaStream_t stream);  // within the cap, upstream willing
  // Takes fully free batches off the books into `out` until `at_least` bytes; skips
  // `except`, or touches only `only`. Their bytes stay reserved until give_back.
  std::size_t detach_free_batches(const SizeClass* except, std::size_t at_least,
                                  const SizeClass* only, std::vector<Detached>& out);
  // Without the lock: waits for each batch's fences, frees it upstream, then unreserves it.
  void give_back(std::vector<Detached> batches);
  void* passthrough(std::size_t bytes, cudaStream_t stream, std::vector<Detached>* room);
  [[noreturn]] void exhausted(const SizeClass& c);  // counts, prints now and then, throws

  DeviceMemoryResource& upstream_;
  SlabOptions options_;
  std::unique_ptr<FenceSource> fences_;
  mutable std::mutex mutex_;
  std::map<std::size_t, SizeClass> classes_;    // block bytes → class
  std::map<std::size_t, int> seen_;             // sizes without a class yet
  std::unordered_set<std::byte*> slab_blocks_;  // every block the slab owns
  std::map<std::byte*, Batch> batches_;
  std::size_t reserved_ = 0, used_ = 0, upstream_allocs_ = 0, passthrough_ = 0;
  std::size_t passthrough_bytes_ = 0;  // live blocks that went upstream
  std::size_t exhaustions_ = 0, next_report_ = 1;
};

}  // namespace vpipe
