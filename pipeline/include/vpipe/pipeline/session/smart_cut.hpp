// --encoder copy with a cut and smart_cut: a cut exact to the frame at a fraction of a
// re-encode's cost. The GOPs wholly inside the cut are copied packet for packet; only the
// frames at its two edges (from the cut's start to the first clean keyframe, and from the
// last one to its end) are decoded and re-encoded, by libx264 with the source's profile,
// level and pixel format and parameter set ids of their own, and the three pieces are
// joined by stream copy (join.hpp) into one stream whose header holds every piece's
// parameter sets (avc_config.hpp). So the frames kept are the ones a re-encoding cut keeps,
// on the same clock, and the copied ones are the source's bytes.
//
// A clean keyframe is an IDR picture that no later packet shows before (a closed GOP): only
// there can copied packets start or end. H.264 in MP4, MOV or Matroska (parameter sets in
// the header); other inputs are refused naming what they are.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "vpipe/pipeline/session/transcode_options.hpp"
#include "vpipe/pipeline/session/transcode_report.hpp"

namespace vpipe {

// Where the pieces go, in the input's video time base: frames shown in [first, copy_from)
// re-encoded, [copy_from, copy_until) copied, [copy_until, end) re-encoded; no copy_from:
// no whole GOP inside the cut (all of it re-encoded). Pure over the packets: unit-tested.
struct SmartCutPlan {
  std::int64_t first = 0;                             // the first frame kept
  std::optional<std::int64_t> copy_from, copy_until;  // until unset: copied to the end
  bool head = false, tail = false;  // whether there are frames to re-encode at each edge
};

struct VideoPacketFacts {
  std::int64_t pts = 0;
  bool idr = false;  // starts an IDR picture (avc_config.hpp: starts_idr)
};

// `packets` in decode order; the cut keeps the frames shown in [from, until) (ticks).
[[nodiscard]] SmartCutPlan plan_smart_cut(const std::vector<VideoPacketFacts>& packets,
                                          std::int64_t from, std::int64_t until);

// Whether the edges' re-encode takes the user's option `key` (crf, preset, the decode's and
// memory's): with the cut's own keys, all a smart cut applies beside a copy's.
[[nodiscard]] bool edge_option(std::string_view key);

// usage_error naming what a smart cut cannot apply (called by check_stream_copy).
void check_smart_cut(const TranscodeOptions& o);
// The cut (check_stream_copy first).
[[nodiscard]] TranscodeReport smart_cut(const TranscodeOptions& o, const RunHooks& hooks);

}  // namespace vpipe
