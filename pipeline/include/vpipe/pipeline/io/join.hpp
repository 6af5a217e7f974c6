// A long file in pieces: where it may be cut (its keyframes, read from its packets without
// decoding), and the pieces, each encoded from one span of it, joined by stream copy into one
// file with the input's audio copied once, in one piece. vpipe.distributed's chunked
// transcode stands on these two (python/vpipe/distributed.py).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/rational.h>
}

namespace vpipe {

struct KeyframeIndex {
  AVRational time_base{0, 1};           // of the timestamps below: the video stream's
  double start_s = 0;                   // the input's start (its earliest stream's): a
                                        // transcode's zero, and what a cut's --ss counts from
  std::int64_t first_pts = 0;           // the earliest shown frame
  std::int64_t end_pts = 0;             // one past the last shown frame (its pts + its duration)
  std::vector<std::int64_t> keyframes;  // each keyframe's pts, in display order
  std::int64_t packets = 0;             // video packets (frames, for a frame per packet)
};

// The video stream's keyframes (packets only: demuxed, not decoded). input_error naming
// `path` when it has no video stream or no timestamps.
[[nodiscard]] KeyframeIndex read_keyframes(const std::string& path);

struct JoinRequest {
  std::vector<std::string> parts;  // in order; each one video stream, the same codec and size
  std::vector<double> starts_s;    // where each part begins on the output's clock
  std::string audio_from;          // the audio's source (empty: none): all of it, moved back by
  double audio_start_s = 0;        // this (the input's start, KeyframeIndex::start_s)
  bool every_audio_track = false;  // a track the output cannot hold refuses the join (AudioCopy)
  std::string output;  // written whole or not at all (StagedOutput), never one of the parts
  // The first part's container metadata (a title) and chapters on the output, the chapters
  // moved by its starts_s (a stream copy of one file; stream_facts.hpp).
  bool first_parts_metadata = false;
  // Non-zero: stop at the packet reached, and finish the file (Ctrl-C). Null: run to the end.
  const std::atomic<int>* interrupt = nullptr;
};

struct JoinResult {
  std::int64_t video_packets = 0;
  std::int64_t audio_packets = 0;
  bool interrupted = false;  // the interrupt stopped it: what was copied is whole
  std::int64_t damaged = 0;  // video packets whose times a muxer refuses (pts before dts, dts
                             // going back: damage), left out and counted
  int audio_streams = 0;     // audio tracks copied
  int chapters = 0;          // kept; -1: the container holds none
};

// Joins the parts by stream copy: part k's timestamps moved to start at starts_s[k]. A part
// whose stream differs from the first's (codec, size, pixel format, headers) is an
// input_error naming it; the output is then not written.
JoinResult join_parts(const JoinRequest& request);

}  // namespace vpipe
