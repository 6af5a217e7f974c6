// What an input's first decoded frame says that its stream parameters may not:
// HDR10 side data carried in SEI or OBUs (hdr.hpp), and the field order, which
// FFmpeg's parsers for DV, ProRes, DNxHD and MJPEG leave unknown and which AVI
// and raw DV do not store. Decoded once, in software, when one of them asks.
#pragma once

#include <functional>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

// The first frame a software decoder gives for one stream, decoded on the first get(). A file is
// read on a second opening (`open_again`); a one-pass input (a pipe: null `open_again`) is read
// from `input` itself, and the packets read for it are kept, for the demuxer to send on first
// (take_read): nothing is lost, and piped DV learns its field order as a file does.
class FirstFrame {
 public:
  FirstFrame(AVFormatContext* input, int index, std::function<UniqueDemuxContext()> open_again);
  // Null when none decodes from the first 500 packets.
  [[nodiscard]] const AVFrame* get();
  // A one-pass input: every packet read to decode the frame, in order; empty for a file.
  [[nodiscard]] std::vector<UniqueAVPacket> take_read() { return std::move(read_); }

 private:
  AVFormatContext* input_;
  int index_;
  std::function<UniqueDemuxContext()> open_again_;
  bool tried_ = false;
  UniqueAVFrame frame_;
  std::vector<UniqueAVPacket> read_;
};

// Whether frames of `codec` can be interlaced without each picture being one
// field: DV, ProRes, DNxHD, MJPEG, MPEG-2, H.264, VC-1, MPEG-4 part 2.
[[nodiscard]] bool codes_interlaced_frames(AVCodecID codec);

// Where `video`'s parameters leave its field order unknown and its codec codes
// interlaced frames: the first frame's (TT or BB, or PROGRESSIVE), written into
// the parameters, which every output's tags and encoder read.
void settle_field_order(AVStream* video, FirstFrame& first);

}  // namespace vpipe
