// A file's audio tracks copied packet for packet into a muxer that is being written with
// video from elsewhere: the Python Encoder's audio_from, and the join of a film's chunks
// (join.hpp), which takes the audio once, in one piece, from the input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

class AudioCopy {
 public:
  // Adds to `out` (before its header) each audio stream of `src` its container holds (the
  // others are named in a warning with `label`). Every packet is moved back by `from_s`
  // (seconds on the source's clock: its start, as a transcode's clock starts there); none
  // is left out, those before it (an encoder's priming) included, as a transcode keeps them.
  // every_track: a track the container cannot hold is a usage_error naming it (--audio copy),
  // before anything is written. cut: the packets that start before `from_s` are left out
  // (a cut's audio: those that start inside it), and the source is read from near there.
  AudioCopy(UniqueDemuxContext src, AVFormatContext* out, std::string label, double from_s = 0,
            bool every_track = false, bool cut = false);
  AudioCopy(const AudioCopy&) = delete;
  AudioCopy& operator=(const AudioCopy&) = delete;

  // Writes the packets up to `until_s` (the output's clock), interleaved by the muxer.
  void pump(double until_s);
  [[nodiscard]] std::int64_t packets() const { return packets_; }

 private:
  UniqueDemuxContext src_;  // null once read to its end
  AVFormatContext* out_;
  std::string label_;
  double from_s_;
  bool cut_;
  std::vector<int> map_;  // source stream → output stream (-1: not copied)
  UniqueAVPacket pkt_;    // read, not yet written (its time is ahead of the video)
  std::int64_t packets_ = 0;
};

}  // namespace vpipe
