// HLS ladders (--hls DIR): the master playlist that lists each rendition's
// playlist with its bandwidth, measured from the segments it wrote (FFmpeg's
// hls muxer writes the renditions themselves).
#pragma once

#include <string>
#include <vector>

extern "C" {
#include <libavcodec/codec_par.h>
}

namespace vpipe {

struct HlsRendition {
  std::string playlist;  // DIR/NAME/index.m3u8, as FFmpeg's hls muxer wrote it
  int width = 0, height = 0;
};

// One rendition's segments: its peak and average bits per second over them.
struct HlsBandwidth {
  long long peak = 0, average = 0;
  int segments = 0;
};
// From its playlist's #EXTINF durations and the segment files' sizes; throws
// input_error naming the playlist where it cannot be read.
[[nodiscard]] HlsBandwidth measure_rendition(const std::string& playlist);

// A stream's codec as RFC 6381 names it for a playlist's CODECS attribute ("avc1.64001f",
// "hvc1.1.6.L93.B0", "mp4a.40.2"), read from its parameter sets where it has them; empty for a
// codec without a name HLS players know.
[[nodiscard]] std::string rfc6381_codec(const AVCodecParameters* par);
// Every stream of a rendition (its first segment's), comma-separated; empty when one of them
// has no such name (a partial CODECS would make a player skip a stream it could play).
[[nodiscard]] std::string rendition_codecs(const std::string& playlist);

// Writes DIR/master.m3u8 (beside, then renamed into place) listing `renditions`
// in their order, each by its path relative to DIR, with its bandwidth, size and codecs.
void write_hls_master(const std::string& dir, const std::vector<HlsRendition>& renditions);

// A failed rendition (its encoder or disk failed mid-run): its playlist and the
// segments the muxer named (seg_NNNNN.ts) removed, and its folder if empty then.
// Nothing else in the folder is touched. Never throws.
void remove_hls_rendition(const std::string& playlist) noexcept;

}  // namespace vpipe
