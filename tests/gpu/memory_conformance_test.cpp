// One conformance suite for every memory strategy and adaptor stack (RMM's
// mr_ref_test way): random sizes, alignment, device patterns written and read
// back, frees on another stream, several threads. Skips, with the reason,
// where no CUDA device exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <numeric>
#include <optional>

#include <random>
#include <sstream>
#include <thread>

#include "soak/soak.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/synthetic.hpp"
#include "vpipe/memory/adaptors.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/cuda_event.hpp"
#include "vpipe/memory/pool_resource.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/graph/frame.hpp"

using namespace vpipe;

namespace {

constexpr std::size_t MiB = 1u << 20;

struct Stack {
  std::string strategy;
  std::optional<std::size_t> budget = std::nullopt;
  bool logging = false;
};

void PrintTo(const Stack& s, std::ostream* os) {
  *os << s.strategy;
  if (s.budget) *os << " budget " << *s.budget / MiB << " MiB";
  if (s.logging) *os << " logged";
}

std::string stack_name(const ::testing::TestParamInfo<Stack>& info) {
  std::string n = info.param.strategy;
  for (auto& c : n)
    if (c == '-') c = '_';
  if (info.param.budget) n += "_budget" + std::to_string(*info.param.budget / MiB) + "MiB";
  if (info.param.logging) n += "_logged";
  return n;
}

class Conformance : public ::testing::TestWithParam<Stack> {
 protected:
  void SetUp() override {
    if (auto reason = cuda_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
    StrategyOptions o;
    o.budget = GetParam().budget;
    strategy_ = std::make_unique<MemoryStrategy>(make_strategy(GetParam().strategy, o));
    mr_ = &strategy_->resource();
    if (GetParam().logging) {
      logger_ = std::make_unique<LoggingAdaptor>(*mr_, log_);
      mr_ = logger_.get();
    }
    VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&a_, cudaStreamNonBlocking));
    VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&b_, cudaStreamNonBlocking));
    VPIPE_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&bad_), sizeof(unsigned long long)));
  }
  void TearDown() override {
    if (a_) cudaStreamSynchronize(a_);
    if (b_) cudaStreamSynchronize(b_);
    logger_.reset();
    strategy_.reset();
    if (a_) cudaStreamDestroy(a_);
    if (b_) cudaStreamDestroy(b_);
    if (bad_) cudaFreeHost(bad_);
  }
  // Writes a pattern into p on `write`, checks it on `check` (ordered after).
  unsigned long long write_and_check(void* p, std::size_t bytes, std::uint32_t seed,
                                     cudaStream_t write, cudaStream_t check) {
    auto* w = static_cast<std::uint32_t*>(p);
    const std::size_t n = bytes / 4;
    *bad_ = 0;
    synthetic::fill_pattern(w, n, seed, write);
    if (check != write) {
      cudaEvent_t e;
      VPIPE_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      VPIPE_CUDA_TRY(cudaEventRecord(e, write));
      VPIPE_CUDA_TRY(cudaStreamWaitEvent(check, e));
      cudaEventDestroy(e);
    }
    synthetic::count_mismatches(w, n, seed, bad_, check);
    VPIPE_CUDA_TRY(cudaGetLastError());
    VPIPE_CUDA_TRY(cudaStreamSynchronize(check));
    return *bad_;
  }

  std::unique_ptr<MemoryStrategy> strategy_;
  std::stringstream log_;
  std::unique_ptr<LoggingAdaptor> logger_;
  DeviceMemoryResource* mr_ = nullptr;
  cudaStream_t a_{}, b_{};
  unsigned long long* bad_ = nullptr;
};

}  // namespace

TEST_P(Conformance, RandomSizesAreAlignedDistinctAndHoldTheirData) {
  std::mt19937 rng(1234);
  std::vector<std::pair<void*, std::size_t>> live;
  // Under a budget, keep the live set at a quarter of it: this test is about
  // correctness, the budget test below about refusals.
  const std::size_t cap = GetParam().budget ? *GetParam().budget / 4 : SIZE_MAX;
  std::size_t live_bytes = 0;
  for (int i = 0; i < 200; ++i) {
    // 4 B .. 32 MiB, log-uniform, with awkward sizes.
    const auto bytes = static_cast<std::size_t>(std::exp2(2 + (rng() % 2300) / 100.0)) + rng() % 7;
    while (!live.empty() && live_bytes + bytes > cap) {
      mr_->deallocate(live.front().first, live.front().second, a_);
      live_bytes -= live.front().second;
      live.erase(live.begin());
    }
    live_bytes += bytes;
    void* p = mr_->allocate(bytes, a_);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % DeviceMemoryResource::kAlignment, 0u) << bytes;
    live.emplace_back(p, bytes);
    if (bytes >= 4) {
      ASSERT_EQ(write_and_check(p, bytes & ~std::size_t{3}, static_cast<std::uint32_t>(i), a_, a_),
                0u);
    }
    if (rng() % 3 == 0) {
      const auto k = rng() % live.size();
      mr_->deallocate(live[k].first, live[k].second, a_);
      live_bytes -= live[k].second;
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  // Every live block still holds its own data: no two overlap.
  std::sort(live.begin(), live.end());
  for (std::size_t i = 1; i < live.size(); ++i)
    ASSERT_LE(static_cast<char*>(live[i - 1].first) + live[i - 1].second,
              static_cast<char*>(live[i].first));
  for (auto& [p, bytes] : live) mr_->deallocate(p, bytes, a_);
}

TEST_P(Conformance, FreeOnAnotherStreamThenReuse) {
  for (int round = 0; round < 20; ++round) {
    const std::size_t bytes = (round % 2 ? 6 : 3) * MiB;
    void* p = mr_->allocate(bytes, a_);
    ASSERT_EQ(write_and_check(p, bytes, 77u + static_cast<unsigned>(round), a_, b_), 0u);
    // b_ used it last: free it there, make a_ wait for b_, reuse on a_.
    mr_->deallocate(p, bytes, b_);
    cudaEvent_t e;
    VPIPE_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    VPIPE_CUDA_TRY(cudaEventRecord(e, b_));
    VPIPE_CUDA_TRY(cudaStreamWaitEvent(a_, e));
    cudaEventDestroy(e);
    void* q = mr_->allocate(bytes, a_);
    ASSERT_EQ(write_and_check(q, bytes, 99u, a_, a_), 0u);
    mr_->deallocate(q, bytes, a_);
  }
}

TEST_P(Conformance, SeveralThreadsEachWithItsStream) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      cudaStream_t s{};
      unsigned long long* bad = nullptr;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      cudaMallocHost(reinterpret_cast<void**>(&bad), sizeof *bad);
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 100; ++i) {
        const std::size_t bytes = (1 + rng() % 8) * MiB;
        void* p = mr_->allocate(bytes, s);
        *bad = 0;
        synthetic::fill_pattern(static_cast<std::uint32_t*>(p), bytes / 4,
                                static_cast<std::uint32_t>(t * 1000 + i), s);
        synthetic::count_mismatches(static_cast<std::uint32_t*>(p), bytes / 4,
                                    static_cast<std::uint32_t>(t * 1000 + i), bad, s);
        cudaStreamSynchronize(s);
        if (*bad) ++failures;
        mr_->deallocate(p, bytes, s);
      }
      cudaStreamSynchronize(s);
      cudaFreeHost(bad);
      cudaStreamDestroy(s);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << "a buffer was overwritten by another thread's work";
}

TEST_P(Conformance, StatisticsTrackEveryCall) {
  auto before = strategy_->stats().stats();
  void* p = mr_->allocate(5 * MiB, a_);
  void* q = mr_->allocate(1 * MiB, a_);
  auto mid = strategy_->stats().stats();
  EXPECT_EQ(mid.bytes.value - before.bytes.value, static_cast<std::int64_t>(6 * MiB));
  EXPECT_EQ(mid.count.value - before.count.value, 2);
  mr_->deallocate(p, 5 * MiB, a_);
  mr_->deallocate(q, 1 * MiB, a_);
  auto after = strategy_->stats().stats();
  EXPECT_EQ(after.bytes.value, before.bytes.value);
  EXPECT_GE(strategy_->stats().allocate_latency().count(), 2u);
  if (GetParam().strategy == "naive")
    EXPECT_EQ(after.device_syncs - before.device_syncs, 2);
  else
    EXPECT_EQ(after.device_syncs, 0);
  const auto u = strategy_->strategy().usage();
  if (GetParam().strategy != "naive") {
    ASSERT_TRUE(u.reserved.has_value());
    EXPECT_GE(*u.reserved, *u.used);
  }
}

TEST_P(Conformance, BudgetFailsWithOutOfMemoryAndRecovers) {
  if (!GetParam().budget) GTEST_SKIP() << "no budget in this stack";
  const std::size_t budget = *GetParam().budget;
  std::vector<void*> blocks;
  bool refused = false;
  for (std::size_t i = 0; i < 2 * budget / (16 * MiB) + 2; ++i) {
    try {
      blocks.push_back(mr_->allocate(16 * MiB, a_));
    } catch (const out_of_memory&) {
      refused = true;
      break;
    }
  }
  EXPECT_TRUE(refused) << "twice the budget was handed out";
  EXPECT_LE(blocks.size() * 16 * MiB, budget);
  EXPECT_GE(strategy_->stats().stats().failures, 1);
  for (void* p : blocks) mr_->deallocate(p, 16 * MiB, a_);
  VPIPE_CUDA_TRY(cudaStreamSynchronize(a_));
  void* again = mr_->allocate(16 * MiB, a_);  // memory came back
  mr_->deallocate(again, 16 * MiB, a_);
}

// Issue #25's one budget rule: what the strategy holds from the device
// (reserved) stays within the budget whatever the sizes, and a refusal is an
// out_of_memory. Frame-like sizes that are not multiples of any page (pool held
// 66 MB under 42 MB on the H200 before the rule).
TEST_P(Conformance, UnderABudgetWhatItHoldsStaysWithinIt) {
  if (!GetParam().budget) GTEST_SKIP() << "no budget in this stack";
  const std::size_t budget = *GetParam().budget;
  std::mt19937 rng(25);
  std::deque<std::pair<void*, std::size_t>> live;
  for (int i = 0; i < 600; ++i) {
    const std::size_t bytes = 1 * MiB + rng() % (12 * MiB) + 13;
    try {
      live.emplace_back(mr_->allocate(bytes, a_), bytes);
    } catch (const out_of_memory&) {
    }
    const auto held = strategy_->strategy().usage().reserved;
    if (held) {
      ASSERT_LE(*held, budget) << "after allocation " << i;
    }
    while (live.size() > 40 || (live.size() > 30 && rng() % 4 == 0)) {
      mr_->deallocate(live.front().first, live.front().second, a_);
      live.pop_front();
    }
  }
  for (auto& [p, bytes] : live) mr_->deallocate(p, bytes, a_);
}

// The soak's workloads' size patterns (soak_frame_format: roi's random regions, the
// ladder's rungs, bursts of held frames) through the soak's shape of threads and
// streams: a source thread allocates and writes each frame on its stream, a filter
// thread waits on it from its own stream, checks it, allocates an output and frees
// the input there, and a sink thread frees the outputs on a third stream. The
// graph strategy crashed in cudaFreeAsync on exactly this at a5d5cd7 (issue #39).
namespace {
struct Handoff {
  DeviceBuffer* buf;
  cudaEvent_t ready;
  std::uint32_t seed;
};
// A blocking queue of Handoffs holding at most 8, as the soak's queues (backpressure:
// the frames in flight stay within a budget stack's cap); nullopt ends it.
class Pipe {
 public:
  void push(std::optional<Handoff> h) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return q_.size() < 8 || !h; });
      q_.push_back(h);
    }
    cv_.notify_all();
  }
  std::optional<Handoff> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !q_.empty(); });
    auto h = q_.front();
    q_.pop_front();
    cv_.notify_all();
    return h;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::optional<Handoff>> q_;
};
}  // namespace

// long: one three-thread pipeline per workload (this thread writes, a filter thread
// checks and rewrites, a sink thread frees), whose lambdas share the test's state.
TEST_P(Conformance, SoakWorkloadSizesAcrossThreadsAndStreams) {
  for (const char* workload : {"roi", "ladder", "burst"}) {
    SCOPED_TRACE(workload);
    SoakOptions o;
    o.workload = workload;
    o.ladder_every = 7;
    std::mt19937 rng(5);
    Pipe to_filter, to_sink;
    std::atomic<int> corrupted{0}, refused{0};
    // A budget stack may refuse (out_of_memory, as the soak's retry would see it):
    // counted, never thrown across a thread.
    const auto try_buffer = [&](std::size_t bytes, cudaStream_t s) -> DeviceBuffer* {
      try {
        return new DeviceBuffer(*mr_, bytes, s);
      } catch (const out_of_memory&) {
        ++refused;
        return nullptr;
      }
    };
    cudaStream_t c{};
    VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
    std::thread filter([&] {
      unsigned long long* bad = nullptr;
      cudaMallocHost(reinterpret_cast<void**>(&bad), sizeof *bad);
      while (auto h = to_filter.pop()) {
        cudaStreamWaitEvent(c, h->ready);
        *bad = 0;
        synthetic::count_mismatches(reinterpret_cast<std::uint32_t*>(h->buf->data()),
                                    h->buf->bytes() / 4, h->seed, bad, c);
        auto* out = try_buffer(1280 * 720 * 3 / 2, c);
        if (out)
          synthetic::fill_pattern(reinterpret_cast<std::uint32_t*>(out->data()), out->bytes() / 4,
                                  h->seed, c);
        cudaStreamSynchronize(c);
        if (*bad) ++corrupted;
        h->buf->retire_on(c);
        delete h->buf;  // freed on the filter's stream, as a stage frees its input
        cudaEventDestroy(h->ready);
        cudaEvent_t e;
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        cudaEventRecord(e, c);
        if (out)
          to_sink.push(Handoff{out, e, h->seed});
        else
          cudaEventDestroy(e);
      }
      to_sink.push(std::nullopt);
      cudaFreeHost(bad);
    });
    std::thread sink([&] {
      while (auto h = to_sink.pop()) {
        cudaStreamWaitEvent(b_, h->ready);
        h->buf->retire_on(b_);
        delete h->buf;
        cudaEventDestroy(h->ready);
      }
    });
    std::deque<std::pair<int, DeviceBuffer*>> held;  // burst: frames kept for a while
    for (int i = 0; i < 400; ++i) {
      const FrameFormat f = soak_frame_format(o, i, rng);
      const auto seed = static_cast<std::uint32_t>(i * 7919);
      auto* buf = try_buffer(static_cast<std::size_t>(f.width) * f.height * 3 / 2, a_);
      if (!buf) continue;
      synthetic::fill_pattern(reinterpret_cast<std::uint32_t*>(buf->data()), buf->bytes() / 4, seed,
                              a_);
      cudaEvent_t e;
      cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      cudaEventRecord(e, a_);
      to_filter.push(Handoff{buf, e, seed});
      if (o.workload == std::string("burst") && i % 50 == 0)
        for (int k = 0; k < 12; ++k)
          if (auto* b = try_buffer(3 * MiB, a_)) held.emplace_back(i + 30, b);
      while (!held.empty() && held.front().first <= i) {
        delete held.front().second;
        held.pop_front();
      }
    }
    to_filter.push(std::nullopt);
    filter.join();
    sink.join();
    for (auto& [until, buf] : held) delete buf;
    VPIPE_CUDA_TRY(cudaGetLastError());
    cudaStreamSynchronize(c);
    cudaStreamDestroy(c);
    EXPECT_EQ(corrupted.load(), 0) << "a frame's bytes changed between its writer and its reader";
    EXPECT_EQ(strategy_->stats().stats().bytes.value, 0) << "every buffer was given back";
    if (!GetParam().budget) {
      EXPECT_EQ(refused.load(), 0) << "no budget: nothing is refused";
    }
    EXPECT_LT(refused.load(), 40) << "a 256 MiB budget holds 16 frames in flight and a burst";
  }
}

// Issue #44: one frame, N readers (the branches of a fan-out), each reading it
// on its own stream for a different time and letting go from its own thread, in
// a random order. The buffer goes back on its owner's stream after every reader
// (LastReaders: events, no host wait); the strategy's next block of that size,
// written at once on the owner's stream, must not change what a slow reader
// still reads (each reader checks the pattern several times over).
TEST_P(Conformance, OneFrameManyReadersFreedInAnyOrder) {
  constexpr int kReaders = 4;
  const std::size_t bytes = 24 * MiB;
  std::vector<cudaStream_t> readers(kReaders);
  for (auto& s : readers) VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long* bad = nullptr;
  VPIPE_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&bad), kReaders * sizeof(*bad)));
  std::mt19937 rng(4444);
  for (int round = 0; round < 12; ++round) {
    std::fill(bad, bad + kReaders, 0ull);
    const auto seed = 500u + static_cast<unsigned>(round);
    auto frame = std::make_shared<DeviceBuffer>(*mr_, bytes, a_);
    auto* words = reinterpret_cast<std::uint32_t*>(frame->data());
    synthetic::fill_pattern(words, bytes / 4, seed, a_);
    RecordedEvent written(a_);
    std::vector<int> order(kReaders);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::thread> threads;
    for (int k : order)
      threads.emplace_back([&, k, passes = 1 + k * 3, held = frame] {
        written.wait_on(readers[k]);
        for (int i = 0; i < passes; ++i)
          synthetic::count_mismatches(words, bytes / 4, seed, bad + k, readers[k]);
        held->retire_on(readers[k]);  // its last use; the copy goes with the thread
      });
    frame.reset();  // the readers hold it now
    for (auto& t : threads) t.join();
    // Freed on a_ after every reader: the next block there may be the same memory.
    void* next = mr_->allocate(bytes, a_);
    synthetic::fill_pattern(static_cast<std::uint32_t*>(next), bytes / 4, seed + 1000u, a_);
    for (auto s : readers) VPIPE_CUDA_TRY(cudaStreamSynchronize(s));
    VPIPE_CUDA_TRY(cudaStreamSynchronize(a_));
    for (int k = 0; k < kReaders; ++k)
      EXPECT_EQ(bad[k], 0u) << "round " << round << ": reader " << k
                            << " saw the next frame's bytes: the buffer was reused under it";
    mr_->deallocate(next, bytes, a_);
  }
  for (auto s : readers) cudaStreamDestroy(s);
  cudaFreeHost(bad);
  EXPECT_EQ(strategy_->stats().stats().bytes.value, 0) << "every buffer was given back";
}

// Every stack a run can make, from the strategy table (kStrategyNames), so a strategy added
// there is tested here without a line written: each strategy alone; each compared one under a
// 256 MiB budget (its native cap, or the held-budget adaptor) and under the logging adaptor.
std::vector<Stack> every_stack() {
  std::vector<Stack> stacks;
  for (const auto& name : strategy_names()) stacks.push_back({name});
  for (const auto& name : compared_strategy_names()) stacks.push_back({name, 256 * MiB});
  for (const auto& name : compared_strategy_names()) stacks.push_back({name, std::nullopt, true});
  return stacks;
}

INSTANTIATE_TEST_SUITE_P(Strategies, Conformance, ::testing::ValuesIn(every_stack()), stack_name);

TEST(ConformanceNames, EveryListedStrategyIsCoveredAndUnknownFails) {
  if (auto reason = cuda_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  for (const auto& n : strategy_names()) EXPECT_NO_THROW((void)make_strategy(n)) << n;
  // The stacks above come from the same table: each strategy is among them, alone.
  const auto stacks = every_stack();
  for (const auto& n : strategy_names())
    EXPECT_TRUE(std::any_of(stacks.begin(), stacks.end(),
                            [&](const Stack& s) { return s.strategy == n && !s.budget; }))
        << n << " has no conformance stack";
  EXPECT_THROW((void)make_strategy("pool2"), logic_error);
}

// The one event wrapper: a recorded event orders a second stream after the first.
TEST(CudaEvent, ARecordedEventOrdersAnotherStream) {
  if (auto reason = cuda_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  cudaStream_t a{}, b{};
  VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  constexpr std::size_t kWords = 16u << 20;  // 64 MiB: long enough that b would overtake a
  std::uint32_t* words = nullptr;
  unsigned long long* bad = nullptr;
  VPIPE_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&words), kWords * 4));
  VPIPE_CUDA_TRY(cudaMallocManaged(reinterpret_cast<void**>(&bad), sizeof *bad));
  *bad = 0;
  synthetic::fill_pattern(words, kWords, 7, a);
  {
    const RecordedEvent written(a);
    written.wait_on(b);
  }  // (destroyed at once: the wait was already enqueued)
  synthetic::count_mismatches(words, kWords, 7, bad, b);
  VPIPE_CUDA_TRY(cudaStreamSynchronize(b));
  EXPECT_EQ(*bad, 0u);
  RecordedEvent end(b);
  end.synchronize();
  EXPECT_TRUE(end.done());
  cudaFree(words);
  cudaFree(bad);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

// PoolOptions::cross_stream_reuse = false (bench mem's "same-stream reuse only" row): a
// block freed on one stream, with no ordering to another stream, is not handed to that
// stream (the driver inserts no dependency), while its own stream reuses it at once. (A
// host synchronize would be an ordering: after one, any stream may reuse it.)
TEST(StreamOrderedPool, WithoutCrossStreamReuseOnlyItsOwnStreamReusesABlock) {
  if (auto reason = cuda_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  PoolOptions o;
  o.cross_stream_reuse = false;
  StreamOrderedPool pool(o);
  cudaStream_t a{}, b{};
  VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  void* first = pool.allocate(MiB, a);
  synthetic::fill_pattern(static_cast<std::uint32_t*>(first), MiB / 4, 1, a);
  pool.deallocate(first, MiB, a);
  void* other = pool.allocate(MiB, b);
  void* again = pool.allocate(MiB, a);
  EXPECT_NE(other, first);
  EXPECT_EQ(again, first);
  pool.deallocate(other, MiB, b);
  pool.deallocate(again, MiB, a);
  VPIPE_CUDA_TRY(cudaStreamSynchronize(a));
  VPIPE_CUDA_TRY(cudaStreamSynchronize(b));
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}
