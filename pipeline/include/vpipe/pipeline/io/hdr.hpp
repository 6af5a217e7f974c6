// HDR10 static metadata (issue #43): the mastering display (SMPTE ST 2086) and
// the content light level (CTA-861.3) of the input, carried to the output:
// in the output stream's side data (MP4 mdcv/clli, MKV colour elements) and,
// for libx265, in the bitstream's SEI (x265-params; FFmpeg 5.1's libx265
// wrapper does not read them from frames).
#pragma once

#include <functional>
#include <optional>
#include <string>

extern "C" {
#include <libavutil/mastering_display_metadata.h>
}

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

struct Hdr10 {
  std::optional<AVMasteringDisplayMetadata> mastering;  // only with has_primaries/has_luminance
  std::optional<AVContentLightMetadata> light;
  [[nodiscard]] bool empty() const { return !mastering && !light; }
  [[nodiscard]] std::string describe() const;  // for the report
};

class FirstFrame;
// The stream's side data when the container has it, else, for a PQ or HLG
// stream, the first decoded frame's (HEVC/AV1 SEI/OBUs; `first` is not
// decoded for SDR streams).
[[nodiscard]] Hdr10 read_hdr10(const AVStream* video, FirstFrame& first);

// x265's words for it: master-display=G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min) in
// 0.00002 and 0.0001 cd/m² units, max-cll=MaxCLL,MaxFALL, ':'-joined; empty for none.
[[nodiscard]] std::string x265_hdr10_params(const Hdr10& h);

// On the output stream, where its muxer writes it.
void add_hdr10_side_data(AVStream* out, const Hdr10& h);

}  // namespace vpipe
