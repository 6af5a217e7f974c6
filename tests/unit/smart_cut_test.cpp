// The smart cut's plan and the avcC it writes (issue #79 item 4). The plan is checked on
// generated streams, not a list: GOPs of random lengths, closed or open, IDR or not, with and
// without B-frames, cut at random places; every plan must copy a run of packets that is
// exactly the frames of its span, start on an IDR, re-encode exactly the rest of the cut, and
// start copying at the first keyframe where that is possible.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string_view>
#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/avc_config.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/smart_cut.hpp"
#include "vpipe/pipeline/session/stream_copy.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

using namespace vpipe;

namespace {

// A stream in decode order: GOPs of 1..12 frames shown at 0, 1, 2… (ticks); some keyframes are
// not IDR pictures; B-frames move a
// P-frame ahead of the B-frames it is shown after; an open GOP's leading B-frames follow its
// I-frame in decode order but show before it.
std::vector<VideoPacketFacts> make_stream(std::mt19937& rng, int gops) {
  std::vector<VideoPacketFacts> out;
  std::int64_t shown = 0;
  for (int g = 0; g < gops; ++g) {
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    const bool idr = rng() % 4 != 0, open = g > 0 && rng() % 5 == 0, bframes = rng() % 2 == 0;
    const int leading = open ? std::min<int>(2, static_cast<int>(shown)) : 0;
    // The keyframe. An open GOP's may be flagged IDR too (a muxer's flag, or damage): its
    // leading frames still make it no place to cut.
    out.push_back({shown + leading, idr});
    // Damage: the keyframe shows before the packet decoded ahead of it (their times swapped).
    if (g > 0 && rng() % 8 == 0) std::swap(out[out.size() - 2].pts, out.back().pts);
    for (int k = 0; k < leading; ++k) out.push_back({shown + k, false});
    std::int64_t next = shown + leading + 1;
    const std::int64_t end = shown + n + leading;
    while (next < end) {
      if (bframes && next + 2 < end) {  // P shown after two B-frames, decoded before them
        out.push_back({next + 2, false});
        out.push_back({next, false});
        out.push_back({next + 1, false});
        next += 3;
      } else {
        out.push_back({next++, false});
      }
    }
    shown = end;
  }
  return out;
}

// The packets from decode index `a` to `b` (not included) are exactly the frames shown in
// [from, until), and the first starts an IDR picture.
bool copyable(const std::vector<VideoPacketFacts>& s, std::int64_t from,
              std::optional<std::int64_t> until) {
  const auto at = [&](std::int64_t pts) {
    return std::find_if(s.begin(), s.end(), [&](auto& p) { return p.pts == pts; }) - s.begin();
  };
  const auto a = at(from);
  const auto b = until ? at(*until) : static_cast<std::ptrdiff_t>(s.size());
  if (until && b == static_cast<std::ptrdiff_t>(s.size())) return false;  // no such frame
  if (a >= b || !s[static_cast<std::size_t>(a)].idr) return false;
  if (until && !s[static_cast<std::size_t>(b)].idr) return false;
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(s.size()); ++i) {
    const std::int64_t t = s[static_cast<std::size_t>(i)].pts;
    const bool shown_inside = t >= from && (!until || t < *until);
    if (shown_inside != (i >= a && i < b)) return false;
  }
  return true;
}

}  // namespace

TEST(SmartCut, EveryPlanCopiesExactlyItsSpanFromTheFirstPlaceItCan) {
  std::mt19937 rng(79);
  int copied = 0, all_reencoded = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const auto s = make_stream(rng, std::uniform_int_distribution<int>(1, 8)(rng));
    const auto frames = static_cast<std::int64_t>(s.size());
    const std::int64_t from = std::uniform_int_distribution<std::int64_t>(0, frames - 1)(rng);
    const std::int64_t until =
        rng() % 4 == 0 ? INT64_MAX
                       : std::uniform_int_distribution<std::int64_t>(from + 1, frames + 1)(rng);
    SCOPED_TRACE(::testing::Message()
                 << "trial " << trial << ", cut [" << from << ", " << until << ") of " << frames);
    const SmartCutPlan p = plan_smart_cut(s, from, until);
    EXPECT_EQ(p.first, from) << "every tick shows a frame: the first kept is the start";
    std::vector<std::int64_t> idr;  // the only places a copy can start or stop
    for (const auto& k : s)
      if (k.idr) idr.push_back(k.pts);
    std::sort(idr.begin(), idr.end());
    if (!p.copy_from) {
      ++all_reencoded;
      for (const std::int64_t k : idr) {  // no copy inside the cut was possible
        if (k < from || k >= std::min(until, frames)) continue;
        if (until >= frames) {
          EXPECT_FALSE(copyable(s, k, std::nullopt)) << "from " << k;
        }
        for (const std::int64_t e : idr) {
          if (e > k && e <= until) {
            EXPECT_FALSE(copyable(s, k, e)) << k << " to " << e;
          }
        }
      }
      continue;
    }
    ++copied;
    ASSERT_GE(*p.copy_from, from);
    ASSERT_TRUE(copyable(s, *p.copy_from, p.copy_until));
    if (p.copy_until) {
      EXPECT_LE(*p.copy_until, until);
      EXPECT_EQ(p.tail, *p.copy_until < std::min(until, frames));
    } else {
      EXPECT_GE(until, frames) << "copied to the end, past the cut's end";
      EXPECT_FALSE(p.tail);
    }
    EXPECT_EQ(p.head, *p.copy_from > from);
    for (const std::int64_t k : idr)  // no earlier start would do
      if (k >= from && k < *p.copy_from) {
        EXPECT_FALSE(copyable(s, k, p.copy_until)) << "could copy from " << k;
      }
  }
  EXPECT_GT(copied, 500) << "generated cuts that copy";
  EXPECT_GT(all_reencoded, 100) << "generated cuts with no GOP inside";
}

TEST(SmartCut, ACutOutsideTheFramesIsAnInputError) {
  const std::vector<VideoPacketFacts> s = {{0, true}, {1, false}};
  EXPECT_THROW((void)plan_smart_cut(s, 5, 9), input_error);
}

namespace {

Bytes nal_sps(int id) {  // header, profile 100, flags, level 40, ue(id) then a stop bit
  Bytes b = {0x67, 100, 0, 40};
  // ue(v): id+1 in binary, preceded by as many zeros as its bits after the first.
  const unsigned v = static_cast<unsigned>(id) + 1;
  int bits = 0;
  while ((v >> bits) > 1) ++bits;
  std::vector<int> code(static_cast<std::size_t>(bits), 0);
  for (int k = bits; k >= 0; --k) code.push_back(static_cast<int>((v >> k) & 1));
  code.push_back(1);
  while (code.size() % 8) code.push_back(0);
  for (std::size_t i = 0; i < code.size(); i += 8) {
    int byte = 0;
    for (std::size_t k = 0; k < 8; ++k) byte = (byte << 1) | code[i + k];
    b.push_back(static_cast<std::uint8_t>(byte));
  }
  return b;
}

Bytes nal_pps(int id) {
  Bytes b = nal_sps(id);  // the same ue(id), right after a one-byte header
  b.erase(b.begin() + 1, b.begin() + 4);
  b[0] = 0x68;
  return b;
}

}  // namespace

TEST(SmartCut, TheAvcConfigKeepsEveryIdOnceAndRefusesTwoSetsWithOneId) {
  for (int id = 0; id < 32; ++id) {
    EXPECT_EQ(sps_id(nal_sps(id)), id);
    EXPECT_EQ(pps_id(nal_pps(id)), id);
  }
  AvcConfig source{.profile = 100,
                   .level = 40,
                   .sps = {nal_sps(0)},
                   .pps = {nal_pps(0)},
                   .trailer = {0xfd, 0xf8, 0xf8, 0}};
  AvcConfig edge = source;
  edge.sps = {nal_sps(1)};
  edge.pps = {nal_pps(1)};
  const AvcConfig merged = merge_avc_configs(source, {edge, edge});
  ASSERT_EQ(merged.sps.size(), 2u);
  ASSERT_EQ(merged.pps.size(), 2u);
  const Bytes written = write_avc_config(merged);
  const auto back = parse_avc_config(written, "merged");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->sps, merged.sps);
  EXPECT_EQ(back->pps, merged.pps);
  EXPECT_EQ(back->trailer, source.trailer);
  EXPECT_EQ(back->level, 40);
  AvcConfig clash = edge;
  clash.sps = {nal_sps(0)};
  clash.sps[0].push_back(0x80);  // id 0 with other contents
  EXPECT_THROW((void)merge_avc_configs(source, {clash}), input_error);
  EXPECT_FALSE(parse_avc_config(Bytes{0, 0, 0, 1, 0x67, 100, 0}, "annex b"));
  Bytes cut = written;
  cut.resize(cut.size() - 7);
  EXPECT_THROW((void)parse_avc_config(cut, "cut short"), input_error);
}

TEST(SmartCut, StartsIdrReadsTheNalTypes) {
  const Bytes idr = {0, 0, 0, 2, 0x06, 0x05, 0, 0, 0, 2, 0x65, 0x88};  // SEI then an IDR slice
  const Bytes p = {0, 0, 0, 2, 0x41, 0x9a};
  EXPECT_TRUE(starts_idr(idr, 4));
  EXPECT_FALSE(starts_idr(p, 4));
  EXPECT_FALSE(starts_idr(Bytes{0, 0, 0, 9, 0x65}, 4)) << "a length past the packet: damage";
}

// With smart_cut, a copy takes the cut and what its edges' encode applies; every other row of
// the schema is still refused by name (the rows are the schema's, the accepted list is the
// contract stated here).
TEST(SmartCut, TakesItsCutAndTheEdgesCodingAndRefusesEveryOtherOption) {
  const std::set<std::string_view> takes = {
      "ss",     "to",     "duration",  "ss_frame",       "to_frame",       "crf", "preset",
      "device", "decode", "nvdec_api", "decode_threads", "encode_threads", "mem", "host"};
  const auto base = [](bool with_cut) {
    TranscodeOptions o;
    o.input = "in.mp4";
    o.output = "out.mp4";
    o.encoder = "copy";
    o.smart_cut = true;
    if (with_cut) o.start_s = 1.0;
    return o;
  };
  EXPECT_NO_THROW(check_stream_copy(base(true)));
  EXPECT_THROW(check_stream_copy(base(false)), usage_error) << "smart_cut without a cut";
  TranscodeOptions reencode = base(true);
  reencode.encoder = "libx264";
  EXPECT_THROW(check_options(reencode), usage_error) << "smart_cut without encoder copy";
  int tried = 0;
  for (const OptionSpec& s : option_schema()) {
    if (s.key == "input" || s.key == "output" || s.key == "encoder" || s.key == "smart_cut" ||
        s.key == "audio")
      continue;
    const bool cut_key = s.key == "ss" || s.key == "to" || s.key == "duration" ||
                         s.key == "ss_frame" || s.key == "to_frame";
    TranscodeOptions o = base(!cut_key);
    bool set = false;
    for (const char* v : {"2", "3", "true", "cpu", "naive", "pageable", "hwaccel", "nvdec", "blur",
                          "x.mkv", "5M", "a=b", "yuv420p", "main", "4.1", "pad", "1.5"}) {
      try {
        s.set(o, v);
      } catch (const std::exception&) {
        continue;
      }
      if (s.get(o) != s.get(base(!cut_key))) {
        set = true;
        break;
      }
    }
    if (!set) continue;  // a row no value here sets (the copy test covers every row)
    ++tried;
    if (takes.count(s.key)) {
      EXPECT_NO_THROW(check_stream_copy(o)) << s.key << " " << s.get(o);
    } else {
      try {
        check_stream_copy(o);
        ADD_FAILURE() << s.key << " " << s.get(o) << ": a smart cut cannot apply it, yet took it";
      } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find(s.key), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(tried, 40);
}
