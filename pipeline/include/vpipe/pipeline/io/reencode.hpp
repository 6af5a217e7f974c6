// A copied stream that the output cannot hold as it is, re-encoded between
// the demuxer and the muxer: audio (audio_encode.hpp) or text subtitles
// (subtitle_encode.hpp). The demuxer's thread pushes each of the stream's
// packets through it (DemuxSource::reencode) and flushes it at the end.
#pragma once

#include <cstdint>
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

}  // namespace vpipe
