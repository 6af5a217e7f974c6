#include "vpipe/memory/pinned_ring.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <thread>

#include "vpipe/base/errors.hpp"

namespace vpipe {

PinnedRing::PinnedRing(std::size_t slots, std::size_t slot_bytes, HostMemory kind,
                       std::unique_ptr<FenceSource> fences)
    : slot_bytes_(slot_bytes), kind_(kind), fences_(std::move(fences)), slots_(slots) {
  VPIPE_EXPECTS(slots > 0 && slot_bytes > 0, "PinnedRing: slots and slot_bytes must be > 0");
  for (auto& s : slots_) {
    void* p = nullptr;
    if (kind_ == HostMemory::kPageable) {
      p = std::aligned_alloc(4096, (slot_bytes + 4095) / 4096 * 4096);
      if (!p) throw std::bad_alloc();
    } else {
      VPIPE_CUDA_TRY(cudaHostAlloc(&p, slot_bytes,
                                   kind_ == HostMemory::kPinnedWriteCombined
                                       ? cudaHostAllocWriteCombined
                                       : cudaHostAllocDefault));
    }
    s.data = static_cast<std::byte*>(p);
  }
}

PinnedRing::~PinnedRing() {
  for (auto& s : slots_) {
    if (s.state == State::kInFlight) {
      try {
        fences_->wait(s.fence);
      } catch (...) {
      }
      fences_->release(s.fence);
    }
    if (kind_ == HostMemory::kPageable)
      std::free(s.data);
    else
      cudaFreeHost(s.data);
  }
}

std::optional<int> PinnedRing::take_ready_slot() {
  const int n = static_cast<int>(slots_.size());
  for (int k = 0; k < n; ++k) {
    const int i = (next_ + k) % n;
    SlotState& s = slots_[static_cast<std::size_t>(i)];
    if (s.state == State::kInFlight && fences_->ready(s.fence)) {
      fences_->release(s.fence);
      s.state = State::kFree;
    }
    if (s.state == State::kFree) {
      s.state = State::kHeld;
      next_ = (i + 1) % n;
      return i;
    }
  }
  return std::nullopt;
}

PinnedRing::Slot PinnedRing::acquire(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ++stats_.acquires;
  auto got = take_ready_slot();
  if (!got) {
    ++stats_.waits;
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + timeout;
    // In-flight slots free up without a signal (the GPU finishes): poll them,
    // and wake early when a held slot is released.
    while (!(got = take_ready_slot())) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ++stats_.timeouts;
        stats_.waited_s +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        throw staging_starved(fmt::format(
            "staging ring starved: all {} slots busy for {} ms (raise the ring size or the "
            "pipeline is stuck)",
            slots_.size(), timeout.count()));
      }
      freed_.wait_for(lock, std::chrono::microseconds(50));
    }
    stats_.waited_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  SlotState& s = slots_[static_cast<std::size_t>(*got)];
  return {*got, s.data, slot_bytes_};
}

void PinnedRing::release(const Slot& slot, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  SlotState& s = slots_.at(static_cast<std::size_t>(slot.index));
  VPIPE_EXPECTS(s.state == State::kHeld, "PinnedRing::release: slot is not held");
  s.fence = fences_->record(stream);
  s.state = State::kInFlight;
}

void PinnedRing::release_now(const Slot& slot) {
  {
    std::lock_guard lock(mutex_);
    SlotState& s = slots_.at(static_cast<std::size_t>(slot.index));
    VPIPE_EXPECTS(s.state == State::kHeld, "PinnedRing::release_now: slot is not held");
    s.state = State::kFree;
  }
  freed_.notify_one();
}

std::size_t PinnedRing::pinned_bytes() const noexcept {
  return kind_ == HostMemory::kPageable ? 0 : slots_.size() * slot_bytes_;
}

RingStats PinnedRing::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace vpipe
