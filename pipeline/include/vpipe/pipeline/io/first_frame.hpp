// What an input's first decoded frame says that its stream parameters may not:
// HDR10 side data carried in SEI or OBUs (hdr.hpp), and the field order, which
// FFmpeg's parsers for DV, ProRes, DNxHD and MJPEG leave unknown and which AVI
// and raw DV do not store. Read on a second opening of the input, in software.
#pragma once

#include <functional>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

// The first frame a software decoder gives for stream `index` of a new opening
// of the input (`open_again`); null when none decodes from the first 500 packets.
[[nodiscard]] UniqueAVFrame first_frame(const std::function<UniqueDemuxContext()>& open_again,
                                        int index);

// Whether frames of `codec` can be interlaced without each picture being one
// field: DV, ProRes, DNxHD, MJPEG, MPEG-2, H.264, VC-1, MPEG-4 part 2.
[[nodiscard]] bool codes_interlaced_frames(AVCodecID codec);

// Where `video`'s parameters leave its field order unknown and its codec codes
// interlaced frames: the first frame's (TT or BB, or PROGRESSIVE), written into
// the parameters, which every output's tags and encoder read. A one-pass input
// (null `open_again`) keeps unknown: it is not opened twice.
void settle_field_order(AVStream* video, const std::function<UniqueDemuxContext()>& open_again);

}  // namespace vpipe
