// A cut (issue #43): where a transcode starts and stops, exact to the frame.
//
// The input is read from the keyframe at or before the start (seek_before),
// decoded from there, and the frames shown before the start are dropped after
// the decoder (FrameWindow, packet.hpp); packets stop once the video has
// passed the end. Copied streams (audio) keep the packets that start inside the
// span, so they begin within one audio frame of the video and end with it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

// What the user asked for: times after the input's start, or frame numbers
// in display order (0: the first shown).
struct CutRequest {
  std::optional<double> start_s, end_s, duration_s;
  std::optional<std::int64_t> start_frame, end_frame;
  bool copyts = false;  // keep the input's timestamps (else the output starts at zero)
};

// The same, in the video stream's clock (seconds, as its timestamps say).
struct Cut {
  std::optional<double> start;     // the first frame kept is the first shown at or after it
  std::optional<double> end;       // frames shown at or after it are left out
  std::optional<double> duration;  // end = start + duration, the start taken from the first
                                   // packet read (a live input, which has no start to count from)
  bool shift = true;               // every timestamp minus the start: the output starts at zero
  std::string describe() const;    // for the report
};

// The first tick of time base `tb` at or after `s` seconds (a thousandth of a tick of slack for
// the seconds' rounding): where a cut's start and end fall among a stream's timestamps. The one
// rule the demuxer's cut (CutGate) and a smart cut's plan both count by.
[[nodiscard]] std::int64_t first_tick_at(double s, AVRational tb);

// Where the input's timeline starts, in seconds (its start_time; 0 without one): a cut's
// times count from it.
[[nodiscard]] double input_origin_s(const AVFormatContext* input);

// The shift from the input's clock to the output's, in seconds. The output starts at zero, as
// FFmpeg's tool makes it: a cut's start, or without one the input's own start, is its zero (an
// MPEG-TS that starts at 11.4 s gave an MP4 that showed nothing for 11.4 s; one whose 33-bit
// clock wrapped starts at -2.3 s, and the MP4's edit list hid those frames). copyts: none. A
// live cut's start is its first packet's, known when read: the demuxer shifts then (0 here).
[[nodiscard]] double output_clock_shift_s(const std::optional<Cut>& cut,
                                          const AVFormatContext* input, bool copyts);

// Resolves `r` for the input opened as `input`: times count from the input's
// start (its start_time, as FFmpeg's -ss); frame numbers are timed by reading
// the video packets from the start on a second opening (`open_again`): the
// n-th frame shown has the n-th smallest timestamp. Throws input_error for a
// start past the input's end or frame numbers on an input without timestamps.
// `live`: the start is the first packet read (a duration only, check_options).
[[nodiscard]] Cut resolve_cut(const CutRequest& r, const AVFormatContext* input, int video,
                              bool live, const std::function<UniqueDemuxContext()>& open_again);

// The times (seconds) of the first frames shown of `video` in `input`, in
// display order, up to frame `last` and some past it (B-frame reordering);
// read from where the input is. Pure over the packets read: unit-tested.
[[nodiscard]] std::vector<double> display_times(AVFormatContext* input, int video,
                                                std::int64_t last);

// Seeks so that the next video keyframe read shows at or before `t` (the
// video's clock, seconds): at t first, then earlier by 1, 2, 4… s, checking the
// first keyframe each time (an MP4 index holds decode times; an MPEG-TS seek
// lands near, not before). False: no such place found (read from the start).
[[nodiscard]] bool seek_before(AVFormatContext* input, int video, double t);

// seek_before, or where it fails (it may have read on) or `t` is at or before the input's
// start, `input` opened afresh from `path`: the next packet read is then the input's first.
void seek_before_or_start(UniqueDemuxContext& input, const std::string& path, int video, double t);

}  // namespace vpipe
