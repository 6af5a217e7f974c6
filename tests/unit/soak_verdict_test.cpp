// The soak verdict on synthetic series with known leaks, drifts and failures:
// it must fail them, and pass a flat run.
#include <gtest/gtest.h>

#include "soak/soak.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/memory/strategy.hpp"

using namespace vpipe;

namespace {

// n samples, reserved = base + leak_per_sample × i, p99 = p99 × (1 + drift × i / n).
std::vector<SoakSample> series(int n, double leak_per_sample, double drift,
                               std::int64_t failures_at = -1, double base = 500) {
  std::vector<SoakSample> v;
  for (int i = 0; i < n; ++i) {
    SoakSample s;
    s.strategy = "pool";
    s.t_s = i;
    s.reserved_mb = base + leak_per_sample * i + (i % 3) * 0.5;  // a little noise
    s.p99_ms = 4.0 * (1 + drift * i / n) + (i % 2) * 0.1;
    s.rss_mb = 100;
    s.failures = failures_at >= 0 && i >= failures_at ? 1 : 0;
    v.push_back(s);
  }
  return v;
}

}  // namespace

TEST(SoakVerdict, FlatRunPasses) {
  const auto v = judge(series(60, 0, 0), {});
  EXPECT_TRUE(v.pass) << (v.reasons.empty() ? "" : v.reasons[0]);
  EXPECT_EQ(v.memory_metric, "reserved");
  ASSERT_TRUE(v.memory_growth.has_value());
  EXPECT_NEAR(*v.memory_growth, 0, 0.01);
  ASSERT_TRUE(v.p99_drift.has_value());
  EXPECT_NEAR(*v.p99_drift, 0, 0.05);
}

TEST(SoakVerdict, SlowLeakFails) {
  // 3 MB a sample on 500 MB: the last third after warm-up peaks ~16 % above the first.
  const auto v = judge(series(60, 3.0, 0), {});
  EXPECT_FALSE(v.pass);
  ASSERT_FALSE(v.reasons.empty());
  EXPECT_NE(v.reasons[0].find("reserved memory grew"), std::string::npos) << v.reasons[0];
  EXPECT_GT(*v.memory_growth, 0.10);
}

TEST(SoakVerdict, GrowthDuringWarmupIsForgiven) {
  auto s = series(60, 0, 0);
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)].reserved_mb = 100 + 50 * i;  // fills up, then flat at 500
  EXPECT_TRUE(judge(s, {}).pass);
  SoakThresholds no_warmup;
  no_warmup.warmup = 0;
  EXPECT_FALSE(judge(s, no_warmup).pass) << "without warm-up the fill-up counts as growth";
}

TEST(SoakVerdict, OneStepSoonAfterWarmupFails) {
  // The shape vmm showed on the H200: flat, then one more 20 MiB chunk for good.
  auto s = series(90, 0, 0, -1, 84);
  for (std::size_t i = 37; i < s.size(); ++i) s[i].reserved_mb = 105;
  const auto v = judge(s, {});
  EXPECT_FALSE(v.pass);
  EXPECT_NEAR(*v.memory_growth, 105.0 / 85.0 - 1, 0.01);
}

TEST(SoakVerdict, NoisyInUseMemoryIsNotGrowth) {
  // naive's "reserved" is what is in use: it swings from frame to frame.
  auto s = series(90, 0, 0);
  for (std::size_t i = 0; i < s.size(); ++i) s[i].reserved_mb = 45 + ((i * 7919) % 11);  // 45..55
  EXPECT_TRUE(judge(s, {}).pass);
}

// Issue #25: naive's reserved bytes are its frames in flight. They swing,
// and a spike late in the run that the warm-up happened not to see is not
// growth (the old rule, the largest value of the last third against the
// warm-up's largest, failed a 50 s ladder run on the H200 at +42 %).
TEST(SoakVerdict, ASwingThatPeaksLateIsNotGrowthButALeakUnderItIs) {
  auto s = series(60, 0, 0);
  for (std::size_t i = 0; i < s.size(); ++i)
    s[i].reserved_mb =
        39.5 + ((i * 7919) % 13 == 0 && i > 20 ? 16.6 : (i % 4) * 0.8);  // late spikes to 56 MB
  const auto swing = judge(s, {});
  EXPECT_TRUE(swing.pass) << swing.reasons.at(0);
  for (std::size_t i = 0; i < s.size(); ++i)
    *s[i].reserved_mb += 0.4 * static_cast<double>(i);  // + a leak
  EXPECT_FALSE(judge(s, {}).pass) << "the leak under the swing moves the median";
}

TEST(SoakVerdict, LatencyDriftFails) {
  const auto v = judge(series(60, 0, 1.5), {});  // p99 rises 150 % over the run
  EXPECT_FALSE(v.pass);
  EXPECT_GT(*v.p99_drift, 0.5);
  ASSERT_FALSE(v.reasons.empty());
  EXPECT_NE(v.reasons.back().find("p99 latency drifted"), std::string::npos);
  SoakThresholds lenient;
  lenient.max_p99_drift = 5.0;
  EXPECT_TRUE(judge(series(60, 0, 1.5), lenient).pass) << "the threshold is an option";
}

// A short soak (5 s at one sample a second: 4 after warm-up, one per third): the drift is one
// sample against one, measured and said to be unjudged; with three a third it is judged.
TEST(SoakVerdict, DriftOfOneSampleAgainstOneIsNotJudgedAndSaysSo) {
  auto s = series(5, 0, 0);
  s.back().p99_ms = 8.0;  // the last third's one sample doubles
  auto v = judge(s, {});
  EXPECT_TRUE(v.pass);
  ASSERT_TRUE(v.p99_drift.has_value());
  EXPECT_GT(*v.p99_drift, 0.5) << "measured";
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("p99 drift not judged: 1 sample(s) per third"), std::string::npos)
      << v.notes[0];
  auto longer = series(12, 0, 0);  // 10 after warm-up: 3 a third
  for (std::size_t i = longer.size() - 3; i < longer.size(); ++i) longer[i].p99_ms = 8.0;
  v = judge(longer, {});
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(v.notes.empty());
}

TEST(SoakVerdict, AnyFailureFails) {
  const auto v = judge(series(60, 0, 0, 59), {});
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.failures, 1);
  // Even one during warm-up.
  EXPECT_FALSE(judge(series(60, 0, 0, 0), {}).pass);
}

TEST(SoakVerdict, TooFewSamplesCannotPass) {
  const auto v = judge(series(2, 0, 0), {});
  EXPECT_FALSE(v.pass);
  EXPECT_NE(v.reasons.at(0).find("sample"), std::string::npos);
}

TEST(SoakVerdict, CpuRunsAreJudgedOnRss) {
  auto s = series(60, 0, 0);
  for (std::size_t i = 0; i < s.size(); ++i) {
    s[i].reserved_mb.reset();
    s[i].rss_mb = 100 + 0.5 * static_cast<double>(i);  // a host leak
  }
  const auto v = judge(s, {});
  EXPECT_EQ(v.memory_metric, "rss");
  EXPECT_FALSE(v.pass);
}

TEST(SoakMetrics, PrometheusTextHasEveryGaugeWithItsStrategy) {
  SoakSample a;
  a.strategy = "pool";
  a.fps = 1234.5;
  a.reserved_mb = 64;
  SoakSample b;
  b.strategy = "slab";
  const auto text = prometheus_text({a, b});
  EXPECT_NE(text.find("# TYPE vpipe_soak_fps gauge"), std::string::npos);
  EXPECT_NE(text.find("vpipe_soak_fps{strategy=\"pool\"} 1234.5"), std::string::npos) << text;
  EXPECT_NE(text.find("vpipe_soak_device_reserved_mb{strategy=\"pool\"} 64"), std::string::npos);
  EXPECT_EQ(text.find("vpipe_soak_device_reserved_mb{strategy=\"slab\"}"), std::string::npos)
      << "no value, no line";
}

// ---- bench headroom's bisection (issue #25) --------------------------------------

#include "soak/headroom.hpp"

TEST(Headroom, BisectionFindsTheSmallestPassingMultipleWithinItsStep) {
  const double edge = 1.37;  // a strategy that passes from 1.37x its live set
  const auto r = vpipe::bisect_headroom(1.0, 3.0, 5, [&](double m) { return m >= edge; });
  ASSERT_TRUE(r.multiple.has_value());
  EXPECT_GE(*r.multiple, edge) << "the answer must be a multiple that passed";
  EXPECT_LE(*r.multiple - edge, 2.0 / 32) << "within (high - low) / 2^steps of the edge";
  EXPECT_EQ(r.probes.size(), 7u) << "high, low, then five halvings";
  EXPECT_TRUE(r.probes.front().pass);
  for (const auto& p : r.probes) EXPECT_EQ(p.pass, p.multiple >= edge);
}

TEST(Headroom, NoAnswerWhenTheHighEndFailsAndTheLowEndWhenItPasses) {
  const auto none = vpipe::bisect_headroom(1.0, 3.0, 4, [](double) { return false; });
  EXPECT_FALSE(none.multiple.has_value());
  EXPECT_EQ(none.probes.size(), 1u) << "nothing below a failing high end is tried";
  const auto all = vpipe::bisect_headroom(1.0, 3.0, 4, [](double) { return true; });
  ASSERT_TRUE(all.multiple.has_value());
  EXPECT_EQ(*all.multiple, 1.0);
  EXPECT_EQ(all.probes.size(), 2u);
}

// --gpus: every strategy on each GPU; the GPUs at once (a group per GPU, its strategies in
// turn), or every run at once with --parallel; without GPUs, today's one group in turn.
TEST(SoakJobs, EveryStrategyOnEachGpuGroupedByWhatRunsAtOnce) {
  const std::vector<std::string> two = {"pool", "vmm"};
  using Groups = std::vector<std::vector<SoakJob>>;
  EXPECT_EQ(soak_jobs(two, {}, false), (Groups{{{"pool", -1}, {"vmm", -1}}}));
  EXPECT_EQ(soak_jobs(two, {}, true), (Groups{{{"pool", -1}}, {{"vmm", -1}}}));
  EXPECT_EQ(soak_jobs(two, {0, 1}, false),
            (Groups{{{"pool", 0}, {"vmm", 0}}, {{"pool", 1}, {"vmm", 1}}}));
  EXPECT_EQ(soak_jobs(two, {1, 0}, true),
            (Groups{{{"pool", 1}}, {{"vmm", 1}}, {{"pool", 0}}, {{"vmm", 0}}}));
  EXPECT_EQ(soak_label("pool", -1), "pool");
  EXPECT_EQ(soak_label("vmm", 1), "vmm@gpu1");
}

// Host memory is judged on device runs too (issue #39): reserved device memory flat,
// RSS growing by a third after warm-up fails, naming host RSS; a flat RSS passes.
TEST(SoakVerdict, HostRssGrowthFailsADeviceRun) {
  auto v_flat = judge(series(60, 0, 0), {});
  ASSERT_TRUE(v_flat.rss_growth.has_value());
  EXPECT_NEAR(*v_flat.rss_growth, 0, 0.01);
  auto leaking = series(60, 0, 0);
  for (std::size_t i = 0; i < leaking.size(); ++i)
    leaking[i].rss_mb = 300 + 2.0 * static_cast<double>(i);
  const auto v = judge(leaking, {});
  EXPECT_FALSE(v.pass);
  ASSERT_TRUE(v.rss_growth.has_value());
  EXPECT_GT(*v.rss_growth, 0.10);
  ASSERT_FALSE(v.reasons.empty());
  EXPECT_NE(v.reasons[0].find("host RSS memory grew"), std::string::npos) << v.reasons[0];
  SoakThresholds loose;
  loose.max_rss_growth = 1.0;
  EXPECT_TRUE(judge(leaking, loose).pass) << "the threshold is the one that decides";
}

namespace {
// A device that grants anything up to `largest` bytes and counts what it was asked.
class FakeDevice final : public DeviceMemoryResource {
 public:
  explicit FakeDevice(std::size_t largest) : largest_(largest) {}
  [[nodiscard]] std::string_view name() const noexcept override { return "fake"; }
  int calls = 0;
  std::size_t biggest_request = 0;

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t) override {
    ++calls;
    biggest_request = std::max(biggest_request, bytes);
    if (bytes > largest_) throw out_of_memory("fake: too big");
    return reinterpret_cast<void*>(std::uintptr_t{4096});
  }
  void do_deallocate(void*, std::size_t, cudaStream_t) noexcept override {}
  std::size_t largest_;
};
}  // namespace

// The largest-block probe's cost is bounded (issue #39): on a 140 GB device with no
// budget it searched up to the free memory, tens of GB per cudaMalloc, ~6 s with every
// stream stalled. Now it asks for at most the ceiling (1 GiB by default, or the budget),
// in at most log2(ceiling / 16 MiB) + 1 allocations.
TEST(SoakProbe, SearchesAtMostTheCeilingOnAHugeDevice) {
  constexpr std::size_t MiB = std::size_t{1} << 20, GB = 1000 * 1000 * 1000;
  const SoakOptions o;
  EXPECT_EQ(o.probe_max, 1024 * MiB);
  const std::size_t hi = probe_ceiling(140 * GB, std::nullopt, o.probe_max);
  EXPECT_EQ(hi, 1024 * MiB);
  FakeDevice roomy(139 * GB);
  EXPECT_GE(probe_largest_block(roomy, nullptr, hi, 0, 16 * MiB), hi - 16 * MiB);
  EXPECT_LE(roomy.biggest_request, hi);
  EXPECT_LE(roomy.calls, 7) << "log2(1 GiB / 16 MiB) + 1";
  FakeDevice tight(300 * MiB);  // a fragmented device: the answer is found below the ceiling
  const std::size_t got = probe_largest_block(tight, nullptr, hi, 0, 16 * MiB);
  EXPECT_LE(got, 300 * MiB);
  EXPECT_GE(got, 300 * MiB - 16 * MiB);
  EXPECT_EQ(probe_ceiling(140 * GB, 40 * MiB, o.probe_max), 40 * MiB) << "a budget caps it";
  EXPECT_EQ(probe_ceiling(200 * MiB, std::nullopt, o.probe_max), 200 * MiB) << "and free memory";
}
