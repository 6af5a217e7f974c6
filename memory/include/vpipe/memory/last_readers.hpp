// LastReaders: the last uses of one buffer by readers on several streams, so
// that its owner frees it after all of them without the host waiting.
//
// A frame that goes to N branches (one decode, many outputs) is one buffer
// with N readers, each done on its own stream at its own time, in any order.
// Each reader says "my work on stream s so far is my last use" (retire_on);
// the buffer's owner, when the last reference goes, orders its own stream
// after every one of them (order_owner) and frees there. With one reader
// (every frame of a one-output chain) no event is made: the owner waits on
// that reader's stream once, as before. A second reader's retire records an
// event on the first one's stream, at that moment after its last use.
//
// `Event` is RecordedEvent on the device (frame.hpp) and a fence of the fake
// device in the tests (memory_logic_test.cpp): constructed on a stream it
// marks the work enqueued there so far; wait_on(s) orders s after it.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

namespace vpipe {

template <class Event>
class LastReaders {
 public:
  explicit LastReaders(cudaStream_t owner) : owner_(owner), last_(owner) {}

  // The work enqueued on `reader` so far is its last use of the buffer (any thread).
  void retire_on(cudaStream_t reader) {
    std::lock_guard lock(mutex_);
    if (reader == last_) return;
    if (last_ != owner_) earlier_.push_back(std::make_unique<Event>(last_));
    last_ = reader;
  }

  // From now on, work on the owner's stream runs after every reader's last use.
  void order_owner() {
    std::lock_guard lock(mutex_);
    for (const auto& e : earlier_) e->wait_on(owner_);
    if (last_ != owner_) Event(last_).wait_on(owner_);
  }

  [[nodiscard]] cudaStream_t owner() const noexcept { return owner_; }
  // Readers on streams other than the owner's seen so far (for the tests and reports).
  [[nodiscard]] std::size_t readers() const {
    std::lock_guard lock(mutex_);
    return earlier_.size() + (last_ != owner_ ? 1 : 0);
  }

 private:
  cudaStream_t owner_;
  cudaStream_t last_;
  std::vector<std::unique_ptr<Event>> earlier_;
  mutable std::mutex mutex_;
};

}  // namespace vpipe
