// BoundedQueue: the link between two stages. Bounded, so a slow consumer
// pushes back on its producers instead of letting frames pile up.
//
// Lifecycle, from the producer side: each producer registers (add_producer)
// before the pipeline starts and calls close() when it has nothing more; the
// consumer sees end-of-stream (pop() returns nullopt) once every producer
// closed and the queue is empty. From the consumer side: stop_reading() says
// "I want no more" (pushes then return false, so producers stop early). Either
// side or the runner may cancel(): both ends wake up and give up at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace vpipe {

struct QueueStats {
  std::string name;
  std::size_t capacity = 0;
  std::size_t high_water = 0;  // most items ever queued at once
  std::size_t pushed = 0;
  double producer_blocked_s = 0;  // time producers waited on a full queue
  std::size_t dropped = 0;        // items a drop policy threw away
  std::size_t depth = 0;          // items queued when the stats were taken
};

// What push() does when the queue is full: wait for room (files: nothing is
// lost), or keep going and lose a frame (live: latency stays bounded):
// the oldest queued item, or the one being pushed.
enum class DropPolicy { kBlock, kDropOldest, kDropNewest };

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity, std::string name = {})
      : capacity_(capacity == 0 ? 1 : capacity), name_(std::move(name)) {}

  void set_policy(DropPolicy p) {
    std::lock_guard lock(mutex_);
    policy_ = p;
  }

  void add_producer() {
    std::lock_guard lock(mutex_);
    ++producers_;
  }

  // Blocks while the queue is full (DropPolicy::kBlock; the other policies
  // drop an item instead, counted, and return true). Returns false, dropping
  // the item, when the consumer stopped reading or the queue was cancelled.
  bool push(T item) {
    std::unique_lock lock(mutex_);
    if (items_.size() >= capacity_ && !closed_for_push() && policy_ != DropPolicy::kBlock) {
      ++dropped_;
      if (policy_ == DropPolicy::kDropNewest) return true;  // `item` goes, the queue stays
      [[maybe_unused]] T oldest = std::move(items_.front());
      items_.pop_front();
      items_.push_back(std::move(item));
      ++pushed_;
      lock.unlock();  // `oldest` is destroyed outside the lock
      not_empty_.notify_one();
      return true;
    }
    if (items_.size() >= capacity_ && !closed_for_push()) {
      const auto t0 = std::chrono::steady_clock::now();
      not_full_.wait(lock, [&] { return items_.size() < capacity_ || closed_for_push(); });
      blocked_ += std::chrono::steady_clock::now() - t0;
    }
    if (closed_for_push()) return false;
    items_.push_back(std::move(item));
    ++pushed_;
    if (items_.size() > high_water_) high_water_ = items_.size();
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  // One producer is done. The consumer sees end-of-stream after the last one.
  void close() {
    {
      std::lock_guard lock(mutex_);
      if (producers_ > 0) --producers_;
    }
    not_empty_.notify_all();
  }

  // Blocks while empty. nullopt: end-of-stream, or cancelled.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || producers_ == 0 || cancelled_; });
    if (cancelled_ || items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

  // The consumer wants nothing more: queued items are dropped, pushes fail.
  void stop_reading() {
    std::deque<T> dropped;
    {
      std::lock_guard lock(mutex_);
      reading_stopped_ = true;
      dropped.swap(items_);
    }
    not_full_.notify_all();
  }

  // Abort: wakes both ends; pops return nullopt, pushes return false.
  void cancel() {
    std::deque<T> dropped;
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
      dropped.swap(items_);
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  [[nodiscard]] bool cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] QueueStats stats() const {
    std::lock_guard lock(mutex_);
    return {name_,
            capacity_,
            high_water_,
            pushed_,
            std::chrono::duration<double>(blocked_).count(),
            dropped_,
            items_.size()};
  }

  // False once nothing pushed will be read any more (cancelled, or the reader stopped).
  [[nodiscard]] bool accepting() const {
    std::lock_guard lock(mutex_);
    return !closed_for_push();
  }

 private:
  [[nodiscard]] bool closed_for_push() const { return cancelled_ || reading_stopped_; }

  const std::size_t capacity_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  int producers_ = 0;
  bool cancelled_ = false;
  bool reading_stopped_ = false;
  std::size_t high_water_ = 0;
  std::size_t pushed_ = 0;
  std::size_t dropped_ = 0;
  DropPolicy policy_ = DropPolicy::kBlock;
  std::chrono::steady_clock::duration blocked_{};
};

}  // namespace vpipe
