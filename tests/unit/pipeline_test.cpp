#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

#include "vpipe/pipeline/graph/phase_clock.hpp"
#include "vpipe/pipeline/graph/pipeline.hpp"

using namespace std::chrono_literals;
using namespace vpipe;

namespace {

// Counts up to `limit` (or forever with limit < 0).
class Counter final : public Source<int> {
 public:
  explicit Counter(int limit, bool* closed = nullptr) : limit_(limit), closed_(closed) {}
  std::string name() const override { return "counter"; }
  Flow produce(Output<int>& out) override {
    if (limit_ >= 0 && next_ >= limit_) return Flow::kStop;
    return out.emit(next_++) ? Flow::kContinue : Flow::kStop;
  }
  void close() noexcept override {
    if (closed_) *closed_ = true;
  }

 private:
  int limit_;
  bool* closed_;
  int next_ = 0;
};

// Doubles, throws on `throw_at`, and emits a tail item at end-of-stream.
class Doubler final : public Stage<int, int> {
 public:
  explicit Doubler(int throw_at = -1, bool fail_open = false)
      : throw_at_(throw_at), fail_open_(fail_open) {}
  std::string name() const override { return "doubler"; }
  void open() override {
    if (fail_open_) throw std::runtime_error("open failed");
  }
  Flow process(int v, Output<int>& out) override {
    if (v == throw_at_) throw std::runtime_error("boom at " + std::to_string(v));
    out.emit(v * 2);
    return Flow::kContinue;
  }
  void finish(Output<int>& out) override { out.emit(-1); }

 private:
  int throw_at_;
  bool fail_open_;
};

class Collector final : public Sink<int> {
 public:
  Collector(std::vector<int>& got, int stop_after = -1, bool* finished = nullptr)
      : got_(got), stop_after_(stop_after), finished_(finished) {}
  std::string name() const override { return "collector"; }
  Flow consume(int v) override {
    got_.push_back(v);
    return stop_after_ >= 0 && static_cast<int>(got_.size()) >= stop_after_ ? Flow::kStop
                                                                            : Flow::kContinue;
  }
  void finish() override {
    if (finished_) *finished_ = true;
  }

 private:
  std::vector<int>& got_;
  int stop_after_;
  bool* finished_;
};

}  // namespace

TEST(Pipeline, RunsToEndOfStreamAndFlushes) {
  Pipeline p;
  std::vector<int> got;
  bool finished = false;
  auto a = p.make_queue<int>("a", 2);
  auto b = p.make_queue<int>("b", 2);
  p.add_source<int>(std::make_unique<Counter>(5), a);
  p.add_stage<int, int>(std::make_unique<Doubler>(), a, b);
  p.add_sink<int>(std::make_unique<Collector>(got, -1, &finished), b);
  p.run();
  EXPECT_EQ(got, (std::vector<int>{0, 2, 4, 6, 8, -1}));
  EXPECT_TRUE(finished);
  const auto stats = p.stage_stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].items_out, 5u);
  EXPECT_EQ(stats[1].items_in, 5u);
  EXPECT_EQ(stats[1].items_out, 6u);
  EXPECT_EQ(stats[2].items_in, 6u);
  EXPECT_GE(stats[1].item_ms_max, stats[1].item_ms_p50) << "per-item latency is recorded";
}

// A stage's name can change after it is added (a CUDA run told to download its
// frames names itself "+download"): the stats ask it then, not at add_stage.
TEST(Pipeline, StatsNameEachStageAsItIsNowNotAsItWasAdded) {
  class Renamed final : public Stage<int, int> {
   public:
    std::string label = "before";
    std::string name() const override { return label; }
    Flow process(int v, Output<int>& out) override {
      out.emit(v);
      return Flow::kContinue;
    }
  };
  Pipeline p;
  std::vector<int> got;
  auto a = p.make_queue<int>("a", 2);
  auto b = p.make_queue<int>("b", 2);
  auto stage = std::make_unique<Renamed>();
  auto* renamed = stage.get();
  p.add_source<int>(std::make_unique<Counter>(3), a);
  p.add_stage<int, int>(std::move(stage), a, b);
  p.add_sink<int>(std::make_unique<Collector>(got), b);
  renamed->label = "after";
  p.run();
  ASSERT_EQ(p.stage_stats().size(), 3u);
  EXPECT_EQ(p.stage_stats()[1].name, "after");
}

TEST(Pipeline, ErrorInOneStageStopsEveryStageAndIsRethrown) {
  Pipeline p;
  std::vector<int> got;
  bool finished = false, source_closed = false;
  auto a = p.make_queue<int>("a", 2);
  auto b = p.make_queue<int>("b", 2);
  // The source never ends on its own: only the failure can stop it.
  p.add_source<int>(std::make_unique<Counter>(-1, &source_closed), a);
  p.add_stage<int, int>(std::make_unique<Doubler>(100), a, b);
  p.add_sink<int>(std::make_unique<Collector>(got, -1, &finished), b);
  EXPECT_THROW(
      {
        try {
          p.run();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "boom at 100");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_TRUE(p.failed());
  EXPECT_FALSE(finished) << "finish() must not run after a failure";
  EXPECT_TRUE(source_closed) << "close() runs for every opened stage";
  EXPECT_LE(got.size(), 100u);
}

TEST(Pipeline, FailureInOpenDoesNotDeadlock) {
  Pipeline p;
  std::vector<int> got;
  auto a = p.make_queue<int>("a", 1);
  auto b = p.make_queue<int>("b", 1);
  p.add_source<int>(std::make_unique<Counter>(-1), a);
  p.add_stage<int, int>(std::make_unique<Doubler>(-1, /*fail_open=*/true), a, b);
  p.add_sink<int>(std::make_unique<Collector>(got), b);
  EXPECT_THROW(p.run(), std::runtime_error);
  EXPECT_TRUE(got.empty());
}

TEST(Pipeline, ConsumerStoppingEarlyStopsAnEndlessSource) {
  Pipeline p;
  std::vector<int> got;
  auto a = p.make_queue<int>("a", 2);
  auto b = p.make_queue<int>("b", 2);
  p.add_source<int>(std::make_unique<Counter>(-1), a);
  p.add_stage<int, int>(std::make_unique<Doubler>(), a, b);
  p.add_sink<int>(std::make_unique<Collector>(got, /*stop_after=*/3), b);
  p.run();  // must return: the stop travels upstream
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2], 4);
  EXPECT_FALSE(p.failed());
}

TEST(Pipeline, RequestStopDrainsAndFinishes) {
  Pipeline p;
  std::vector<int> got;
  bool finished = false;
  auto a = p.make_queue<int>("a", 2);
  auto b = p.make_queue<int>("b", 2);
  p.add_source<int>(std::make_unique<Counter>(-1), a);
  p.add_stage<int, int>(std::make_unique<Doubler>(), a, b);
  p.add_sink<int>(std::make_unique<Collector>(got, -1, &finished), b);
  std::thread stopper([&] {
    std::this_thread::sleep_for(20ms);
    p.request_stop();
  });
  p.run();
  stopper.join();
  EXPECT_TRUE(finished) << "a graceful stop flushes like end-of-stream";
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), -1);
}

// A stage's phases leave out the warm-up: a slow first call (a decoder's set-up)
// does not weigh on the steady mean.
TEST(PhaseClock, MeansLeaveOutTheWarmUp) {
  using std::chrono::milliseconds;
  PhaseClock<2> clock({"a", "b"}, /*warmup=*/3);
  EXPECT_TRUE(clock.phases().empty()) << "no items yet";
  for (int i = 0; i < 3; ++i) {  // warm-up: a second each, left out
    clock.lap(0, Clock::now() - std::chrono::seconds(1));
    clock.item();
  }
  EXPECT_TRUE(clock.phases().empty()) << "only warm-up items so far";
  for (int i = 0; i < 4; ++i) {  // steady: 10 ms in a, 0 in b
    const auto t = clock.lap(0, Clock::now() - milliseconds(10));
    clock.lap(1, t);
    clock.item();
  }
  const auto ph = clock.phases();
  ASSERT_EQ(ph.size(), 2u);
  EXPECT_EQ(ph[0].name, "a");
  EXPECT_EQ(ph[1].name, "b");
  EXPECT_EQ(ph[0].items, 4u);
  EXPECT_GE(ph[0].ms_per_item, 10.0);
  EXPECT_LT(ph[0].ms_per_item, 500.0) << "the warm-up's seconds are not in the mean";
  EXPECT_LT(ph[1].ms_per_item, ph[0].ms_per_item);
}
