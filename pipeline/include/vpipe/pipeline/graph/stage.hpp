// Stages: the units a Pipeline runs, each on its own thread.
//
// Contract (MediaPipe-style): open() -> process()... -> finish() -> close().
//  - open() prepares; if it throws, the pipeline fails and close() is not called.
//  - process() handles one item and may emit any number of items downstream.
//    Returning Flow::kStop ends this stage's input early (e.g. a frame limit).
//  - finish() is end-of-stream: flush what is buffered (decoder and encoder
//    delay). It runs on a normal end and on a graceful stop, not on failure.
//  - close() runs whenever open() succeeded, failure included; it must not throw.
// A Source produces until it returns kStop (end-of-stream) or a stop is
// requested; a Sink consumes and emits nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/pipeline/graph/queue.hpp"

namespace vpipe {

enum class Flow { kContinue, kStop };

using Clock = std::chrono::steady_clock;

template <class T>
using QueuePtr = std::shared_ptr<BoundedQueue<T>>;

// Where a stage emits. emit() returns false once downstream wants no more
// (stopped reading or cancelled): the stage should stop producing.
template <class T>
class Output {
 public:
  // `blocked_ns`, if given, accumulates the time emit() waits on a full queue.
  explicit Output(BoundedQueue<T>* queue, std::atomic<std::int64_t>* blocked_ns = nullptr)
      : queue_(queue), blocked_ns_(blocked_ns) {}
  bool emit(T item) {
    if (stopped_) return false;
    const auto t0 = std::chrono::steady_clock::now();
    const bool pushed = queue_->push(std::move(item));
    if (blocked_ns_)
      blocked_ns_->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now() - t0)
                                 .count());
    if (!pushed) {
      stopped_ = true;
      return false;
    }
    ++emitted_;
    return true;
  }
  [[nodiscard]] bool downstream_stopped() const noexcept { return stopped_; }
  [[nodiscard]] bool accepting() const { return !stopped_ && queue_->accepting(); }
  [[nodiscard]] std::size_t emitted() const noexcept { return emitted_; }

 private:
  BoundedQueue<T>* queue_;
  std::atomic<std::int64_t>* blocked_ns_;
  bool stopped_ = false;
  std::size_t emitted_ = 0;
};

// One named part of a stage's work an item, in steady state (PhaseClock).
struct Phase {
  std::string name;
  double ms_per_item = 0;   // mean over the steady items
  std::uint64_t items = 0;  // the steady items: those after the warm-up
};

class StageBase {
 public:
  virtual ~StageBase() = default;
  [[nodiscard]] virtual std::string name() const = 0;  // fixed once run() starts: read by stats
  virtual void open() {}
  virtual void close() noexcept {}
  // GPU time of the work it enqueues per item, ms, where it measures it
  // (CUDA filter stages; called after the run).
  [[nodiscard]] virtual std::optional<double> gpu_ms_per_item() const { return std::nullopt; }
  // Where its time an item goes, part by part, where it times its parts
  // (decode; called after the run).
  [[nodiscard]] virtual std::vector<Phase> phases() const { return {}; }
};

template <class Out>
class Source : public StageBase {
 public:
  // Emit zero or more items; return kStop at end-of-stream.
  virtual Flow produce(Output<Out>& out) = 0;
  virtual void finish(Output<Out>& /*out*/) {}
};

template <class In, class Out>
class Stage : public StageBase {
 public:
  virtual Flow process(In item, Output<Out>& out) = 0;
  virtual void finish(Output<Out>& /*out*/) {}
};

template <class In>
class Sink : public StageBase {
 public:
  virtual Flow consume(In item) = 0;
  virtual void finish() {}
};

}  // namespace vpipe
