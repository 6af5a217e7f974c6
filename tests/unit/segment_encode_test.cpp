// --encode-segments' join: each segment's DTS continue the ones before it
// (continue_dts), the presentation times untouched.
#include <gtest/gtest.h>

#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/parallel/segment_encode.hpp"

namespace {

// Packets in decode order, as (pts, dts) pairs.
std::vector<vpipe::Packet> packets(std::initializer_list<std::pair<int, int>> times) {
  std::vector<vpipe::Packet> out;
  for (auto [pts, dts] : times) {
    vpipe::Packet p{vpipe::make_av_packet(), {}};
    p.pkt->pts = pts;
    p.pkt->dts = dts;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::int64_t> dts_of(const std::vector<vpipe::Packet>& ps) {
  std::vector<std::int64_t> v;
  for (const auto& p : ps) v.push_back(p.pkt->dts);
  return v;
}

}  // namespace

TEST(ContinueDts, ASegmentThatContinuesIsLeftAlone) {
  std::int64_t last = AV_NOPTS_VALUE;
  auto first = packets({{0, -2}, {2, -1}, {1, 0}, {3, 1}});  // I P B P, two frames of delay
  vpipe::continue_dts(first, last);
  EXPECT_EQ(dts_of(first), (std::vector<std::int64_t>{-2, -1, 0, 1}));
  EXPECT_EQ(last, 1);
  auto second = packets({{4, 2}, {6, 3}, {5, 4}});
  vpipe::continue_dts(second, last);
  EXPECT_EQ(dts_of(second), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(last, 4);
}

// What libx264 did to a short last segment after Ctrl-C on a loaded machine:
// its DTS four frames behind the PTS where the others were two; the muxer
// refused "non monotonically increasing dts" and the run failed.
TEST(ContinueDts, ASegmentThatLagsFurtherMovesUpTogether) {
  std::int64_t last = 72;
  auto lagging = packets({{75, 71}, {77, 72}, {76, 73}});
  vpipe::continue_dts(lagging, last);
  EXPECT_EQ(dts_of(lagging), (std::vector<std::int64_t>{73, 74, 75}));
  EXPECT_EQ(lagging[0].pkt->pts, 75) << "presentation times stay";
  EXPECT_EQ(last, 75);
}

TEST(ContinueDts, ASegmentThatCannotFollowIsAnError) {
  std::int64_t last = 80;
  auto early = packets({{75, 73}, {76, 74}});  // would need a DTS past its PTS
  EXPECT_THROW(vpipe::continue_dts(early, last), vpipe::logic_error);
}
