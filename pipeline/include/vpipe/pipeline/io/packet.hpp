// A compressed packet in flight between the demuxer, the decoder, the encoder and the muxer,
// and the span of a cut it carries to the decoder.
#pragma once

#include <cstdint>

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

// A cut's span, in the video stream's time base as its packets carry it
// (after the demuxer's shift): the decoders drop the frames shown outside it
// (those decoded from the keyframe before the start, those reordered past the
// end). A frame without a time is kept.
struct FrameWindow {
  std::int64_t from = INT64_MIN, until = INT64_MAX;
  [[nodiscard]] bool keeps(std::int64_t pts) const {
    return pts == AV_NOPTS_VALUE || (pts >= from && pts < until);
  }
  bool operator==(const FrameWindow&) const = default;
};

// A compressed packet in flight. For the muxer, pkt->stream_index is the
// output stream and timestamps are still in the source's time base.
struct Packet {
  UniqueAVPacket pkt;
  Clock::time_point origin{};
  // No data: the input starts over (--loop). The decoder gives up every frame
  // it holds back (B-frame reordering), then starts afresh (DecodeStage::restart
  // says when it goes straight on instead).
  bool drain = false;
  FrameWindow window{};  // video: the frames of this pass of the input to keep (a cut)
};

}  // namespace vpipe
