// --encode-segments K (issue #21): one output encoded by K encoders at once.
//
// The frames are cut into segments of `segment_frames` (whole GOPs: the
// encoders' keyframe interval). Each segment goes to a fresh encoder of its
// own, opened with the output's settings, on one of K threads; the segments'
// packets leave in order. The result is one stream: every segment starts with
// a keyframe, every encoder has the output's settings (checked: each encoder's
// headers are the output's, byte for byte), and the timestamps are the frames'
// own. A CPU encoder that cannot use every core (libx264 at 720p on 16 cores:
// scripts/gpu-encode) gains; the cost is K + 1 segments of frames held in
// host memory, copied out of the staging ring, and K segments of latency.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <span>
#include <vector>

#include "vpipe/pipeline/io/media_stages.hpp"

namespace vpipe {

class SegmentedEncodeStage final : public Stage<Frame, Packet> {
 public:
  // Opens an encoder with the output's settings (open_video_encoder).
  using OpenEncoder = std::function<UniqueAVCodecContext()>;
  // `header`: the encoder the output's stream was described from (its time
  // base, size, headers); it encodes nothing.
  SegmentedEncodeStage(OpenEncoder open, const AVCodecContext* header, int out_stream,
                       MediaCounters& counters, int encoders, int segment_frames);
  ~SegmentedEncodeStage() override;  // waits for the segments still encoding
  SegmentedEncodeStage(const SegmentedEncodeStage&) = delete;
  SegmentedEncodeStage& operator=(const SegmentedEncodeStage&) = delete;
  [[nodiscard]] std::string name() const override { return "encode"; }
  Flow process(Frame frame, Output<Packet>& out) override;
  void finish(Output<Packet>& out) override;
  void read_stamps(bool on) { read_stamps_ = on; }

 private:
  bool dispatch(Output<Packet>& out);  // the filling segment to an encoder; false: stopped
  bool emit_oldest(Output<Packet>& out);
  OpenEncoder open_;
  const AVCodecContext* header_;
  int out_stream_;
  MediaCounters& counters_;
  int encoders_;
  std::size_t segment_frames_;
  bool read_stamps_ = false;
  std::int64_t last_dts_ = AV_NOPTS_VALUE;  // the last packet emitted (encoder time base)
  EncoderInput input_;
  std::vector<Frame> filling_;
  std::deque<std::future<std::vector<Packet>>> encoding_;  // oldest first; last: they use the above
};

// `frames` (av->pts set, in the encoder's time base) through `encoder`, then
// its flush: every packet, on stream `out_stream`, with its frame's origin.
[[nodiscard]] std::vector<Packet> encode_frames(AVCodecContext* encoder, std::span<Frame> frames,
                                                int out_stream);

// A segment's packets after the ones before it: their DTS moved up together,
// where the segment's encoder started them at or below `last_dts` (an encoder
// flushed after a few frames can lag its DTS further behind its PTS than the
// others did: seen with libx264 on a short last segment after Ctrl-C), so
// they keep increasing; `last_dts` becomes the segment's last. Throws
// logic_error where a DTS would pass its packet's PTS (not one stream).
void continue_dts(std::vector<Packet>& packets, std::int64_t& last_dts);

// Each of `encoders` encoders' share of the cores (at least 1).
[[nodiscard]] int encode_threads_each(int encoders);

// The segment length for --encode-segments: the GOP asked for, else 60 frames.
[[nodiscard]] int encode_segment_frames(int gop);

}  // namespace vpipe
