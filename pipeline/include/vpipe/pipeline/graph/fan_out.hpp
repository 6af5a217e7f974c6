// One decode, many outputs: the stages where a pipeline forks into branches.
//
//   decode ─► [shared] ─► FanOut ─┬─► branch 1: filters ─► encode ─► mux
//                                 ├─► branch 2: …
//                                 └─► branch N: …
//
// FanOut hands each item to every branch's queue: a Frame is copied as a
// handle, so a device frame is one buffer with N readers (each branch's stage
// retires it on its own stream; the owner frees it after the last:
// memory/last_readers.hpp). Its time blocked on each branch says which branch
// holds the others back.
//
// A branch that fails (its disk is full, its encoder refuses) must not end the
// others: BranchStage / BranchSink run a branch's stage and turn its exception into the
// branch's failure (BranchHealth); from then on the stage swallows what comes,
// FanOut closes that branch's queue, and the other branches run to their end.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

// A branch's state: whether it failed, and why (any thread).
class BranchHealth {
 public:
  void fail(std::string why) {
    std::lock_guard lock(mutex_);
    if (why_.empty()) why_ = std::move(why);
    failed_.store(true);
  }
  [[nodiscard]] bool failed() const noexcept { return failed_.load(); }
  [[nodiscard]] std::string why() const {
    std::lock_guard lock(mutex_);
    return why_;
  }
  // Runs fn (a stage's process, consume or finish) unless the branch failed;
  // its exception fails the branch. What comes after a failure is swallowed,
  // so upstream drains.
  template <class Fn>
  Flow guard(Fn&& fn) {
    if (failed()) return Flow::kContinue;
    try {
      if constexpr (std::is_void_v<decltype(fn())>) {
        fn();
        return Flow::kContinue;
      } else {
        return fn();
      }
    } catch (const std::exception& e) {
      fail(e.what());
      return Flow::kContinue;
    }
  }

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string why_;
};

template <class T>
class FanOut final : public Sink<T> {
 public:
  struct Branch {
    QueuePtr<T> queue;
    std::shared_ptr<BranchHealth> health;
  };
  explicit FanOut(std::vector<Branch> branches) : branches_(std::move(branches)) {
    for (auto& b : branches_) b.queue->add_producer();
    open_.assign(branches_.size(), true);
  }
  [[nodiscard]] std::string name() const override { return "fan-out"; }
  Flow consume(T item) override {
    bool any = false;
    for (std::size_t i = 0; i < branches_.size(); ++i) {
      if (!open_[i]) continue;
      if (branches_[i].health && branches_[i].health->failed()) {
        close_branch(i);  // its stages see the end and finish; the others go on
        continue;
      }
      if (!branches_[i].queue->push(item)) close_branch(i);  // a handle: the same pixels
      any = any || open_[i];
    }
    return any ? Flow::kContinue : Flow::kStop;
  }
  void finish() override { close(); }
  void close() noexcept override {
    for (std::size_t i = 0; i < branches_.size(); ++i)
      if (open_[i]) close_branch(i);
  }
  // Seconds this stage waited for room in branch i's queue (its own count; any thread).
  [[nodiscard]] double blocked_s(std::size_t i) const {
    return branches_[i].queue->stats().producer_blocked_s;
  }

 private:
  void close_branch(std::size_t i) noexcept {
    open_[i] = false;
    branches_[i].queue->close();
  }
  std::vector<Branch> branches_;
  std::vector<bool> open_;
};

// A stage of one branch: its exception fails the branch, not the pipeline.
template <class In, class Out>
class BranchStage final : public Stage<In, Out> {
 public:
  BranchStage(std::unique_ptr<Stage<In, Out>> inner, std::shared_ptr<BranchHealth> health,
              std::string label)
      : inner_(std::move(inner)), health_(std::move(health)), label_(std::move(label)) {}
  [[nodiscard]] std::string name() const override { return inner_->name() + " " + label_; }
  void open() override { inner_->open(); }
  void close() noexcept override { inner_->close(); }
  [[nodiscard]] std::optional<double> gpu_ms_per_item() const override {
    return inner_->gpu_ms_per_item();
  }
  [[nodiscard]] std::vector<Phase> phases() const override { return inner_->phases(); }
  Flow process(In item, Output<Out>& out) override {
    return health_->guard([&] { return inner_->process(std::move(item), out); });
  }
  void finish(Output<Out>& out) override {
    (void)health_->guard([&] { inner_->finish(out); });
  }

 private:
  std::unique_ptr<Stage<In, Out>> inner_;
  std::shared_ptr<BranchHealth> health_;
  std::string label_;
};

template <class In>
class BranchSink final : public Sink<In> {
 public:
  BranchSink(std::unique_ptr<Sink<In>> inner, std::shared_ptr<BranchHealth> health,
             std::string label)
      : inner_(std::move(inner)), health_(std::move(health)), label_(std::move(label)) {}
  [[nodiscard]] std::string name() const override { return inner_->name() + " " + label_; }
  void open() override { inner_->open(); }
  void close() noexcept override { inner_->close(); }
  [[nodiscard]] std::optional<double> gpu_ms_per_item() const override {
    return inner_->gpu_ms_per_item();
  }
  [[nodiscard]] std::vector<Phase> phases() const override { return inner_->phases(); }
  Flow consume(In item) override {
    return health_->guard([&] { return inner_->consume(std::move(item)); });
  }
  void finish() override {
    (void)health_->guard([&] { inner_->finish(); });
  }

 private:
  std::unique_ptr<Sink<In>> inner_;
  std::shared_ptr<BranchHealth> health_;
  std::string label_;
};

}  // namespace vpipe
