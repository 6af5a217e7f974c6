// Track choice (--map, FFmpeg's -map 0:a:1): which of the input's audio and subtitle tracks an
// output keeps. A selector is a type, a or s, and optionally the track's number among that
// type's (from 0) or its language (its tag, in either case; und: a track without one): "a",
// "a:1", "a:eng", "s:fre"; FFmpeg's input prefix "0:" is taken too. No selector: every track.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

extern "C" {
#include <libavformat/avformat.h>
}

namespace vpipe {

struct TrackSelector {
  AVMediaType type = AVMEDIA_TYPE_AUDIO;
  std::optional<int> index;  // among the input's tracks of that type, from 0
  std::string language;      // its language tag; empty: any
  std::string text;          // as written, for messages
};

// usage_error " TEXT: …" (the caller names the option before it) saying what a selector looks
// like, when `text` is none.
[[nodiscard]] TrackSelector parse_track_selector(std::string_view text);

// Whether `s`, the nth (from 0) track of its type in its input, is one the selector names.
[[nodiscard]] bool selects(const TrackSelector& t, const AVStream* s, int nth_of_type);

// An output's maps over one input's streams, asked of each in order.
class TrackMap {
 public:
  explicit TrackMap(const std::vector<std::string>& maps);
  // Whether the output keeps `s` (asked once per stream, in the input's order): any stream
  // but audio and subtitles, every track when there are no maps, else those a map names.
  bool keeps(const AVStream* s);
  [[nodiscard]] static std::string describe(const AVStream* s);  // "audio, eng"
  // usage_error for a map that named no track of `input` ("map a:3: input has 2 audio tracks").
  void check_each_matched(const std::string& input) const;

 private:
  std::vector<TrackSelector> selectors_;
  std::vector<bool> matched_;
  int audio_ = 0, subtitles_ = 0;  // tracks of each type seen so far
};

}  // namespace vpipe
