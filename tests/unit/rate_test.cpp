// fps= (#79 item 5): FpsClock's streaming rule against FFmpeg's fps filter written as a set
// (each tick from the first frame's to the end shows the last frame whose rounded time is at or
// before it), over generated inputs; and RateStage's frames: their times, the last frame's
// duration, --frames' cap. The end-to-end tests compare whole runs with FFmpeg's own filter.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "vpipe/pipeline/filters/rate_stage.hpp"

namespace vpipe {
namespace {

std::int64_t rounded(std::int64_t pts, AVRational tb, AVRational rate, AVRounding r) {
  return av_rescale_q_rnd(pts, tb, av_inv_q(rate),
                          static_cast<AVRounding>(r | AV_ROUND_PASS_MINMAX));
}

// How many ticks each frame is shown at, by the definition: tick t in [r_0, max(r_end, r_last))
// shows the last frame i with r_i <= t (FFmpeg reads the end only once one frame is left, so
// every frame but the last is shown up to the next one's tick, whatever the end says).
std::vector<std::int64_t> shown_by_definition(const std::vector<std::int64_t>& pts,
                                              std::int64_t end, AVRational tb, RateChange c) {
  std::vector<std::int64_t> r;
  for (auto p : pts) r.push_back(rounded(p, tb, c.rate, c.rounding));
  std::vector<std::int64_t> count(pts.size(), 0);
  const std::int64_t last = std::max(rounded(end, tb, c.rate, c.end_rounding), r.back());
  for (std::int64_t t = r.front(); t < last; ++t) {
    std::size_t shown = 0;
    for (std::size_t i = 0; i < r.size(); ++i)
      if (r[i] <= t) shown = i;
    count[shown]++;
  }
  return count;
}

constexpr AVRounding kRoundings[] = {AV_ROUND_NEAR_INF, AV_ROUND_ZERO, AV_ROUND_INF, AV_ROUND_DOWN,
                                     AV_ROUND_UP};

TEST(FpsClock, ShowsEachFrameAtTheTicksFfmpegsRuleGives) {
  std::mt19937 rng(79);
  const AVRational rates[] = {{25, 1}, {30000, 1001}, {24000, 1001}, {15, 2},
                              {60, 1}, {1, 1},        {50, 1}};
  const AVRational bases[] = {{1, 1000},     {1, 90000}, {1, 15360},
                              {1001, 30000}, {1, 25},    {1, 12800}};
  for (int n = 0; n < 3000; ++n) {
    const AVRational rate =
        n % 3 == 0 ? AVRational{1 + static_cast<int>(rng() % 120), 1 + static_cast<int>(rng() % 4)}
                   : rates[rng() % std::size(rates)];
    const AVRational tb = bases[rng() % std::size(bases)];
    const RateChange change{rate, kRoundings[rng() % 5], kRoundings[rng() % 5]};
    // Non-decreasing times: a steady step with jitter, repeats and pauses.
    const auto step = std::max<std::int64_t>(
        1, av_rescale_q(1, AVRational{1, 1 + static_cast<int>(rng() % 90)}, tb));
    std::vector<std::int64_t> pts{static_cast<std::int64_t>(rng() % 1000)};
    const int frames = 1 + static_cast<int>(rng() % 60);
    for (int i = 1; i < frames; ++i) {
      const auto kind = rng() % 10;
      const std::int64_t gap = kind == 0 ? 0
                               : kind == 1
                                   ? step * (2 + rng() % 20)
                                   : step + static_cast<std::int64_t>(rng() % (step / 2 + 1));
      pts.push_back(pts.back() + gap);
    }
    const std::int64_t end = pts.back() + static_cast<std::int64_t>(rng() % (3 * step + 1));
    const auto want = shown_by_definition(pts, end, tb, change);

    FpsClock clock(change);
    std::vector<std::int64_t> got;
    std::int64_t next_first = rounded(pts.front(), tb, rate, change.rounding);
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const Ticks t = clock.next(pts[i], tb);
      if (i == 0) {
        EXPECT_EQ(t.count(), 0);
        continue;
      }
      if (t.count() > 0) EXPECT_EQ(t.first, next_first) << "ticks are consecutive";
      next_first += t.count();
      got.push_back(t.count());
    }
    got.push_back(clock.end(end, tb).count());
    std::size_t d = 0;
    while (d < got.size() && d < want.size() && got[d] == want[d]) ++d;
    ASSERT_EQ(got, want) << "first difference at frame " << d << " of " << got.size() << "; case "
                         << n << ": rate " << rate.num << "/" << rate.den << ", base " << tb.num
                         << "/" << tb.den << ", " << frames << " frames";
  }
}

TEST(FpsClock, AFrameWithoutATimeBeforeAnyOtherStartsNothing) {
  FpsClock clock(RateChange{{10, 1}});
  EXPECT_EQ(clock.next(AV_NOPTS_VALUE, {1, 1000}).count(), 0);
  EXPECT_EQ(clock.end(1000, {1, 1000}).count(), 0) << "no frame had a time: nothing to show";
}

// RateStage: each kept frame goes on at its tick in the rate's time base; the last lasts its
// packet's duration (none known: it ends at its own time); `most` stops it.
std::vector<Frame> through(RateStage& stage, const std::vector<Frame>& in, Flow* last = nullptr) {
  BoundedQueue<Frame> q(1000);
  q.add_producer();
  Output<Frame> out(&q);
  Flow flow = Flow::kContinue;
  for (const Frame& f : in)
    if ((flow = stage.process(f, out)) == Flow::kStop) break;
  stage.finish(out);
  q.close();
  if (last) *last = flow;
  std::vector<Frame> got;
  while (auto f = q.pop()) got.push_back(std::move(*f));
  return got;
}

class NoPixels final : public Filter {
 public:
  explicit NoPixels(AVRational rate) : rate_(rate) {}
  FrameFormat configure(const FrameFormat& in) override { return in; }
  void process(const Frame&, Frame&) override {}
  [[nodiscard]] std::optional<RateChange> rate_change() const override { return RateChange{rate_}; }

 private:
  AVRational rate_;
};

ConfiguredFilter rate_step(AVRational rate) {
  return {"fps", std::make_unique<NoPixels>(rate), {}, {}, {}};
}

Frame at(std::int64_t pts, std::int64_t duration, std::int64_t index) {
  Frame f;
  f.pts = pts;
  f.duration = duration;
  f.time_base = {1, 1000};
  f.index = index;
  return f;
}

TEST(RateStage, SendsFramesOnTheTicksAndTheLastForItsDuration) {
  // 25 fps in 1/1000 to 50 fps: each frame twice; the last's 40 ms packet: two ticks.
  RateStage up(rate_step({50, 1}), std::nullopt);
  std::vector<Frame> in;
  for (int i = 0; i < 5; ++i) in.push_back(at(40 * i, 40, i));
  const auto got = through(up, in);
  ASSERT_EQ(got.size(), 10u);
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].pts, static_cast<std::int64_t>(k));
    EXPECT_EQ(got[k].time_base.num, 1);
    EXPECT_EQ(got[k].time_base.den, 50);
    EXPECT_EQ(got[k].index, static_cast<std::int64_t>(k / 2)) << "the same frame, repeated";
  }
  EXPECT_EQ(up.stats().in, 5);
  EXPECT_EQ(up.stats().out, 10);
  EXPECT_EQ(up.stats().repeated, 5);
  // Without durations (a VFR MP4's) the last frame ends at its own time, as FFmpeg's: 8 ticks.
  RateStage unknown(rate_step({50, 1}), std::nullopt);
  for (auto& f : in) f.duration = 0;
  EXPECT_EQ(through(unknown, in).size(), 8u);
}

TEST(RateStage, ASecondRateChangeReadsTheFirstsTicks) {
  // 25 fps → 10 → 50: each frame the first sends lasts one of its ticks (1/10 s), so the second
  // ends 4 s of input at 200 frames, as FFmpeg's fps=10,fps=50 does (it once read the input's
  // 40 ms duration as 40 ticks and repeated the last frame for seconds).
  RateStage ten(rate_step({10, 1}), std::nullopt), fifty(rate_step({50, 1}), std::nullopt);
  std::vector<Frame> in;
  for (int i = 0; i < 100; ++i) in.push_back(at(40 * i, 40, i));
  const auto mid = through(ten, in);
  ASSERT_EQ(mid.size(), 40u);
  EXPECT_EQ(mid.back().duration, 1);
  EXPECT_EQ(through(fifty, mid).size(), 200u);
}

TEST(RateStage, NothingOnATickIsAnErrorNamingTheStep) {
  RateStage slow(rate_step({1, 10}), std::nullopt);  // one frame every 10 s
  try {
    (void)through(slow, {at(0, 40, 0)});
    ADD_FAILURE() << "an empty output must not pass silently";
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find("fps: no frame falls on a tick"), std::string::npos)
        << e.what();
  }
}

TEST(RateStage, StopsAtMostFramesAndSaysSo) {
  RateStage down(rate_step({5, 1}), std::int64_t{3});
  std::vector<Frame> in;
  for (int i = 0; i < 100; ++i) in.push_back(at(40 * i, 40, i));
  Flow flow = Flow::kContinue;
  const auto got = through(down, in, &flow);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(flow, Flow::kStop) << "its input ends early";
  EXPECT_EQ(got[2].pts, 2);
  EXPECT_LT(down.stats().in, 100) << "frames after the third are not read";
}

}  // namespace
}  // namespace vpipe
