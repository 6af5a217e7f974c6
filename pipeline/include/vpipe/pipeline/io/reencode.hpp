// A copied stream that the output cannot hold as it is, re-encoded between
// the demuxer and the muxer: audio (audio_encode.hpp) or text subtitles
// (subtitle_encode.hpp). The demuxer's thread pushes each of the stream's
// packets through it (DemuxSource::copy_to, CopyFanOut) and flushes it at the end.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

class StreamReencoder {
 public:
  StreamReencoder() = default;
  StreamReencoder(const StreamReencoder&) = delete;
  StreamReencoder& operator=(const StreamReencoder&) = delete;
  virtual ~StreamReencoder() = default;
  // The encoder: its parameters make the output stream's, its time base the packets'.
  [[nodiscard]] virtual const AVCodecContext* encoder() const = 0;
  // One input packet (its stream's time base, after the demuxer's shift), or
  // nullptr at the end (everything held comes out): the packets encoded, in
  // the encoder's time base. A packet that does not decode or encode is
  // counted in errors() and skipped.
  [[nodiscard]] virtual std::vector<UniqueAVPacket> push(const AVPacket* pkt) = 0;
  [[nodiscard]] virtual std::int64_t errors() const = 0;
};

// A software decoder for stream `in`, opened with its parameters and time base (the
// packets' times, and cues' lengths, come from it); `what` names it in errors ("audio"):
// input_error where FFmpeg has no decoder for it, ffmpeg_error where one fails to open.
[[nodiscard]] UniqueAVCodecContext open_stream_decoder(const AVStream* in, std::string_view what);

}  // namespace vpipe
