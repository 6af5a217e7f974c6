// Host staging for uploads and downloads: a ring of N slots allocated once.
//
// PinnedRing with kPinned / kPinnedWriteCombined takes its slots from
// cudaHostAlloc (write-combined is faster for CPU writes + H2D, slow for CPU
// reads); kPageable uses plain aligned host memory, for comparison. Nothing
// is pinned per frame.
//
// Slot life: acquire() → the caller fills or reads it → release(slot, stream)
// after enqueuing the transfer on `stream`: a fence is recorded, and the slot
// is handed out again only once that fence is ready. acquire() blocks while
// every slot is held or in flight, up to a timeout, and counts the waits
// (starvation) so a report can say the ring is too small.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "vpipe/memory/fence.hpp"

namespace vpipe {

enum class HostMemory { kPinned, kPinnedWriteCombined, kPageable };

class staging_starved : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RingStats {
  std::size_t acquires = 0;
  std::size_t waits = 0;  // acquires that found no free slot at first
  double waited_s = 0;
  std::size_t timeouts = 0;
};

class PinnedRing {
 public:
  struct Slot {
    int index = -1;
    std::byte* data = nullptr;
    std::size_t bytes = 0;
  };

  PinnedRing(std::size_t slots, std::size_t slot_bytes, HostMemory kind,
             std::unique_ptr<FenceSource> fences = std::make_unique<CudaFences>());
  ~PinnedRing();
  PinnedRing(const PinnedRing&) = delete;
  PinnedRing& operator=(const PinnedRing&) = delete;

  // Throws staging_starved after `timeout` without a free slot.
  Slot acquire(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  // The transfer using the slot is enqueued on `stream`: recycle after it.
  void release(const Slot& slot, cudaStream_t stream);
  // No transfer pending: the slot is free at once.
  void release_now(const Slot& slot);

  [[nodiscard]] std::size_t slot_count() const noexcept { return slots_.size(); }
  [[nodiscard]] std::size_t slot_bytes() const noexcept { return slot_bytes_; }
  [[nodiscard]] HostMemory kind() const noexcept { return kind_; }
  [[nodiscard]] std::size_t pinned_bytes() const noexcept;
  [[nodiscard]] RingStats stats() const;

 private:
  enum class State { kFree, kHeld, kInFlight };
  struct SlotState {
    std::byte* data = nullptr;
    State state = State::kFree;
    FenceId fence = 0;
  };
  std::optional<int> take_ready_slot();  // under mutex_

  std::size_t slot_bytes_;
  HostMemory kind_;
  std::unique_ptr<FenceSource> fences_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<SlotState> slots_;
  int next_ = 0;  // round-robin start: keeps slot reuse in ring order
  RingStats stats_;
};

}  // namespace vpipe
