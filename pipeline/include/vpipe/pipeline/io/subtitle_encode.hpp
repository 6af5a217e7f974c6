// Text subtitles a container cannot hold as they are (SubRip or ASS into MP4,
// SubRip into WebM), converted as `ffmpeg -c:s mov_text` does: each cue decoded to
// ASS events and encoded in the container's own text format (mov_text in MP4
// and MOV, WebVTT in WebM, ASS in Matroska), its time and length kept. Bitmap subtitles (DVD,
// PGS, DVB) cannot become text: those stay dropped, with a note.
#pragma once

#include <cstdint>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/reencode.hpp"

namespace vpipe {

// The text codec a text subtitle stream of `from` is converted to for `container`: the
// muxer's own where it is text, else the first text codec it holds (mov_text for MP4 and
// MOV), where FFmpeg decodes `from` and encodes it. AV_CODEC_ID_NONE: no conversion
// (bitmaps, or a container without text subtitles: MPEG-TS).
[[nodiscard]] AVCodecID text_subtitle_codec(const AVOutputFormat* container, AVCodecID from);

class SubtitleReencoder final : public StreamReencoder {
 public:
  // Into `to` (text_subtitle_codec's answer). Throws input_error naming what failed.
  SubtitleReencoder(const AVStream* in, AVCodecID to);
  [[nodiscard]] const AVCodecContext* encoder() const override { return encoder_.get(); }
  [[nodiscard]] std::vector<UniqueAVPacket> push(const AVPacket* pkt) override;
  [[nodiscard]] std::int64_t errors() const override { return errors_; }

 private:
  UniqueAVCodecContext decoder_;
  UniqueAVCodecContext encoder_;
  std::vector<std::uint8_t> buffer_;  // one encoded cue (FFmpeg's own tool allows 1 MiB)
  std::int64_t errors_ = 0;
};

}  // namespace vpipe
