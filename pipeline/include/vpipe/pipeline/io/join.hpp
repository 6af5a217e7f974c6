// A long file in pieces: where it may be cut (its keyframes, read from its packets without
// decoding), and the pieces, each encoded from one span of it, joined by stream copy into one
// file with the input's audio copied once, in one piece. vpipe.distributed's chunked
// transcode stands on these two (python/vpipe/distributed.py).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
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

// One piece of the output: a file's video stream, or a span of its packets.
struct JoinPart {
  std::string path;
  double shift_s = 0;  // added to its timestamps: where its clock puts the output's
  // Only the GOPs from the keyframe shown at from_pts up to the one shown at until_pts (its
  // own time base), in decode order; unset: from its first packet, to its last. Each must be
  // a closed GOP's (a smart cut's checks; smart_cut.hpp).
  std::optional<std::int64_t> from_pts{}, until_pts{};
  // Its decode times moved back, together, so that its last is before the next part's first
  // (an edge coded without reordering, before copied GOPs that reorder); shown times stay.
  bool ends_before_next = false;
};

struct JoinRequest {
  std::vector<JoinPart> parts;  // in order; each one video stream, the same codec and size
  // The part whose stream the output's is (parameters, time base, rotation, language).
  std::size_t stream_from = 0;
  // Set: the output's codec header, holding every part's parameter sets (a smart cut's merged
  // avcC); the parts' own headers may then differ. Empty: every part's must be the same.
  std::vector<std::uint8_t> headers;
  std::string audio_from;    // the audio's source (empty: none): all of it, moved back by
  double audio_start_s = 0;  // this (the input's start, KeyframeIndex::start_s)
  // Set: only the audio packets that start in [audio_start_s, audio_end_s) of the source's
  // clock, as a transcode's cut keeps copied audio.
  std::optional<double> audio_end_s;
  bool every_audio_track = false;  // a track the output cannot hold refuses the join (AudioCopy)
  std::string output;  // written whole or not at all (StagedOutput), never one of the parts
  // The stream_from part's container metadata (a title) and its chapters within
  // [chapters_from_s, chapters_until_s) of its clock, moved by its shift_s (stream_facts.hpp).
  bool metadata = false;
  double chapters_from_s = -1e300, chapters_until_s = 1e300;
  // The parts end before the audio's end (a smart cut stopped in an edge): the audio ends
  // where the video does.
  bool cut_short = false;
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
  std::vector<std::int64_t> part_packets;  // video packets written of each part
  int chapters = 0;                        // kept; -1: the container holds none
};

// Joins the parts by stream copy, each part's timestamps moved by its shift_s. A part whose
// stream differs from the output's (codec, size, pixel format, and headers unless the
// request gives them) is an input_error naming it; the output is then not written.
JoinResult join_parts(const JoinRequest& request);

}  // namespace vpipe
