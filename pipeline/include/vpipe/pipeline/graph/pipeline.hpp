// Pipeline: runs stages on their own threads, joined by bounded queues.
//
//   source ──q──► stage ──q──► … ──q──► sink
//
// End-of-stream flows down the queues (each producer closes its output). The
// first error anywhere cancels every queue, so every thread wakes and exits,
// and run() rethrows that error after all threads joined. request_stop() is
// the graceful stop (SIGINT): sources stop producing, everything downstream
// drains and finishes, so outputs are finalized.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/memory/histogram.hpp"
#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

struct StageStats {
  std::string name;
  std::uint64_t items_in = 0;
  std::uint64_t items_out = 0;
  double busy_s = 0;  // time inside produce/process/consume/finish, less waits on a full queue
  // Time per produce/process/consume call (finish not included), ms.
  double item_ms_p50 = 0, item_ms_p99 = 0, item_ms_max = 0;
  std::optional<double> gpu_ms_per_item;  // StageBase::gpu_ms_per_item()
  std::vector<Phase> phases;              // StageBase::phases()
};

class Pipeline {
 public:
  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();

  template <class T>
  QueuePtr<T> make_queue(std::string name, std::size_t capacity) {
    auto q = std::make_shared<BoundedQueue<T>>(capacity, std::move(name));
    cancellers_.push_back([q] { q->cancel(); });
    queue_stats_.push_back([q] { return q->stats(); });
    return q;
  }

  template <class Out>
  void add_source(std::unique_ptr<Source<Out>> source, QueuePtr<Out> out);
  template <class In, class Out>
  void add_stage(std::unique_ptr<Stage<In, Out>> stage, QueuePtr<In> in, QueuePtr<Out> out);
  template <class In>
  void add_sink(std::unique_ptr<Sink<In>> sink, QueuePtr<In> in);

  // Runs every stage to completion. Rethrows the first error.
  void run();
  // Graceful stop: sources end their stream; the rest drains. Thread-safe,
  // async-signal-unsafe (call it from a watcher thread, not a signal handler).
  void request_stop() noexcept { stop_requested_.store(true); }
  [[nodiscard]] bool stop_requested() const noexcept { return stop_requested_.load(); }
  [[nodiscard]] bool failed() const noexcept { return failed_.load(); }

  [[nodiscard]] std::vector<StageStats> stage_stats() const;
  [[nodiscard]] std::vector<QueueStats> queue_stats() const;

 private:
  struct Node {
    std::unique_ptr<StageBase> stage;
    std::function<void(Node&)> body;
    std::atomic<std::uint64_t> items_in{0};
    std::atomic<std::uint64_t> items_out{0};
    std::atomic<std::int64_t> busy_ns{0};
    std::atomic<std::int64_t> blocked_ns{0};  // inside emit(), waiting for downstream
    Histogram item_ns;
  };
  class BusyTimer {
   public:
    explicit BusyTimer(Node& n, bool per_item = true)
        : node_(n), per_item_(per_item), blocked0_(n.blocked_ns.load()), t0_(Clock::now()) {}
    ~BusyTimer() {
      // Backpressure is the next stage's cost, not this one's work.
      const auto ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count() -
          (node_.blocked_ns.load() - blocked0_);
      node_.busy_ns.fetch_add(ns);
      if (per_item_) node_.item_ns.record(static_cast<std::uint64_t>(ns));
    }
    BusyTimer(const BusyTimer&) = delete;
    BusyTimer& operator=(const BusyTimer&) = delete;

   private:
    Node& node_;
    bool per_item_;
    std::int64_t blocked0_;
    Clock::time_point t0_;
  };

  void fail(std::exception_ptr error) noexcept;
  // Runs open → loop → close for one node, turning exceptions into fail().
  template <class Loop>
  void guarded(Node& node, Loop&& loop) noexcept;

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::function<void()>> cancellers_;
  std::vector<std::function<QueueStats()>> queue_stats_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr first_error_;
};

template <class Loop>
void Pipeline::guarded(Node& node, Loop&& loop) noexcept {
  bool opened = false;
  try {
    node.stage->open();
    opened = true;
    loop();
  } catch (...) {
    fail(std::current_exception());
  }
  if (opened) node.stage->close();
}

template <class Out>
void Pipeline::add_source(std::unique_ptr<Source<Out>> source, QueuePtr<Out> out) {
  out->add_producer();
  auto node = std::make_unique<Node>();
  auto* src = source.get();
  node->stage = std::move(source);
  node->body = [this, src, out](Node& n) {
    guarded(n, [&] {
      Output<Out> emit(out.get(), &n.blocked_ns);
      Flow flow = Flow::kContinue;
      while (flow == Flow::kContinue && !stop_requested() && !emit.downstream_stopped()) {
        BusyTimer t(n);
        flow = src->produce(emit);
      }
      if (!failed() && !out->cancelled()) {
        BusyTimer t(n, false);
        src->finish(emit);
      }
      n.items_out = emit.emitted();
      out->close();
    });
  };
  nodes_.push_back(std::move(node));
}

template <class In, class Out>
void Pipeline::add_stage(std::unique_ptr<Stage<In, Out>> stage, QueuePtr<In> in,
                         QueuePtr<Out> out) {
  out->add_producer();
  auto node = std::make_unique<Node>();
  auto* st = stage.get();
  node->stage = std::move(stage);
  node->body = [this, st, in, out](Node& n) {
    guarded(n, [&] {
      Output<Out> emit(out.get(), &n.blocked_ns);
      while (auto item = in->pop()) {
        ++n.items_in;
        Flow flow;
        {
          BusyTimer t(n);
          flow = st->process(std::move(*item), emit);
        }
        if (flow == Flow::kStop || emit.downstream_stopped()) {
          in->stop_reading();
          break;
        }
      }
      if (!failed() && !in->cancelled() && !out->cancelled()) {
        BusyTimer t(n, false);
        st->finish(emit);
      }
      n.items_out = emit.emitted();
      out->close();
    });
  };
  nodes_.push_back(std::move(node));
}

template <class In>
void Pipeline::add_sink(std::unique_ptr<Sink<In>> sink, QueuePtr<In> in) {
  auto node = std::make_unique<Node>();
  auto* sk = sink.get();
  node->stage = std::move(sink);
  node->body = [this, sk, in](Node& n) {
    guarded(n, [&] {
      while (auto item = in->pop()) {
        ++n.items_in;
        Flow flow;
        {
          BusyTimer t(n);
          flow = sk->consume(std::move(*item));
        }
        if (flow == Flow::kStop) {
          in->stop_reading();
          break;
        }
      }
      if (!failed() && !in->cancelled()) {
        BusyTimer t(n, false);
        sk->finish();
      }
    });
  };
  nodes_.push_back(std::move(node));
}

}  // namespace vpipe
