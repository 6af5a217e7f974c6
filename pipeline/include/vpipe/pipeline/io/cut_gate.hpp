// A resolved cut (cut.hpp) applied to the packets of each pass over the input, for the
// demuxer (demux.hpp): which it keeps, and which frames each video packet's pass keeps.
// Video: every packet from the keyframe before the start (the decoder needs them; the frames
// before the start are dropped after it, by the FrameWindow) until one decoded at or after
// the end. Copied streams: the packets that start inside the span, read on for a second past
// the video's end (the muxer interleaved them later); a subtitle cue clipped to the span.
#pragma once

#include <cstdint>

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/demux_clock.hpp"
#include "vpipe/pipeline/io/packet.hpp"

namespace vpipe {

class CutGate {
 public:
  explicit CutGate(Cut c) : cut_(std::move(c)) {}
  [[nodiscard]] const Cut& cut() const { return cut_; }

  enum class Verdict {
    kKeep,
    kDrop,
    kPassOver,      // this pass is done (the copied streams are past the end too)
    kVideoPastEnd,  // a video packet past the end: dropped; the pass is done unless streams
                    // beside the video are copied (they go on a second past it)
  };
  // A packet of stream `index` (the video is `video`), before retiming, in the input's own
  // clock. A live cut's start is the first timed packet's: `clock` is told it then.
  Verdict judge(AVPacket* pkt, const AVFormatContext& input, int index, int video,
                DemuxClock& clock);
  // The frames this pass keeps, as its video timestamps shifted by `offset_s` (the clock's).
  [[nodiscard]] FrameWindow window(AVRational video_tb, double offset_s) const;

  void sought() { to_keyframe_ = true; }  // a seek can land inside a GOP: on to a keyframe
  void next_pass() { video_past_end_ = false; }

 private:
  bool clip_cue(AVPacket* pkt, AVRational tb) const;
  Verdict judge_video(const AVPacket& pkt, const AVStream& s);

  Cut cut_;
  bool to_keyframe_ = false;     // after a seek: video packets before a keyframe are dropped
  bool video_past_end_ = false;  // this pass's video has passed the cut's end
};

}  // namespace vpipe
