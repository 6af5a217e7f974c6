// TimestampRepair (issue #40): a damaged input's frame times, made usable. One
// bad time costs one frame's timing, never the file's.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "vpipe/pipeline/io/media_stages.hpp"

namespace {

struct Repaired {
  std::vector<std::int64_t> pts;
  int repaired = 0;
};

// step 1 tick, a gap of up to 10 ticks is the input's own.
Repaired repair(const std::vector<std::int64_t>& in) {
  vpipe::TimestampRepair times(1, 10);
  Repaired out;
  for (const auto pts : in) {
    const auto t = times.next(pts);
    out.pts.push_back(t.pts);
    out.repaired += t.repaired;
  }
  return out;
}

using V = std::vector<std::int64_t>;

TEST(TimestampRepair, CleanTimesAndGapsWithinTheBoundPassUntouched) {
  const auto r = repair({100, 101, 102, 110, 111});  // a gap of 8 frames: a camera's pause
  EXPECT_EQ(r.pts, (V{100, 101, 102, 110, 111}));
  EXPECT_EQ(r.repaired, 0);
}

TEST(TimestampRepair, OneTimeLeapingAheadCostsOnlyItsOwnSlot) {
  // A bit flip turned one time into 13 hours: the file stays as long as the input.
  const auto r = repair({0, 1, 2, 3, 1'684'800'000, 5, 6, 7});
  EXPECT_EQ(r.pts, (V{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_LE(r.repaired, 2);  // the bad frame, and the one that brings the timeline back
}

TEST(TimestampRepair, TimesGoingBackContinueAtTheirOwnSpacing) {
  // The timeline restarts (a concatenation, a wrapped clock): later frames are not
  // squeezed into one tick each, they keep their spacing after the last time.
  const auto r = repair({10, 12, 14, 2, 4, 6});
  EXPECT_EQ(r.pts, (V{10, 12, 14, 15, 17, 19}));
  EXPECT_EQ(r.repaired, 1);
}

TEST(TimestampRepair, ALastingJumpIsFollowedAfterOneRepair) {
  const auto r = repair({0, 1, 2, 1'000'000, 1'000'001, 1'000'002});
  EXPECT_EQ(r.pts, (V{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(r.repaired, 1);
}

TEST(TimestampRepair, FramesWithoutATimeAreOneStepApart) {
  const auto r = repair({AV_NOPTS_VALUE, AV_NOPTS_VALUE, AV_NOPTS_VALUE});
  EXPECT_EQ(r.pts, (V{0, 1, 2}));
  EXPECT_EQ(r.repaired, 0);
}

TEST(TimestampRepair, AnEqualTimeMovesOneStepOn) {
  const auto r = repair({5, 5, 6});
  EXPECT_EQ(r.pts, (V{5, 6, 7}));
  EXPECT_EQ(r.repaired, 1);
}

}  // namespace
