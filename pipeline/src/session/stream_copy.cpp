#include "vpipe/pipeline/session/stream_copy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/join.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/smart_cut.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

namespace vpipe {

namespace {

// The options a stream copy applies (by schema key); every other one is refused when set.
// input and output: what is copied where; encoder: "copy" itself; audio: auto and copy copy
// the audio tracks the output's container holds, none leaves them out (encode is refused).
constexpr std::string_view kCopyHonours[] = {"input", "output", "encoder", "audio", "smart_cut"};
// And with smart_cut (smart_cut.hpp): the cut, and what the edges' re-encode takes.
constexpr std::string_view kCutKeys[] = {"ss", "to", "duration", "ss_frame", "to_frame"};

template <std::size_t N>
bool among(std::string_view key, const std::string_view (&keys)[N]) {
  return std::find(std::begin(keys), std::end(keys), key) != std::end(keys);
}

bool honoured(std::string_view key, bool smart) {
  return among(key, kCopyHonours) || (smart && (among(key, kCutKeys) || edge_option(key)));
}

}  // namespace

bool is_stream_copy(const TranscodeOptions& o) { return o.encoder == "copy"; }

TranscodeReport copy_report(const TranscodeOptions& o) {
  TranscodeReport r;
  r.input = o.input;
  r.output = o.output;
  r.encoder = "copy";
  r.decode = "none (stream copy)";
  r.device = "none";
  return r;
}

void count_join(TranscodeReport& r, const JoinResult& done) {
  r.video_packets_written = done.video_packets;
  r.other_packets_written = done.audio_packets;
  r.interrupted = r.interrupted || done.interrupted;
  r.packets_damaged = done.damaged;
  r.copied_streams = done.audio_streams;
}

void check_stream_copy(const TranscodeOptions& o) {
  std::vector<std::string> refused;
  bool cut = false;
  for (const OptionSpec& s : option_schema())
    if (!honoured(s.key, o.smart_cut) && s.get(o) != s.default_text()) {
      refused.push_back(s.key);
      cut = cut || among(s.key, kCutKeys);
    }
  if (o.audio == AudioMode::kEncode) refused.emplace_back("audio encode");
  if (o.output == "null") refused.emplace_back("output null");
  if (picture_output(o.output) != Picture::kNone) refused.emplace_back("a picture output");

  // The copy reads its input twice, the video and, beside it, the audio (join.hpp).
  if (!o.input.empty() && !can_read_again(o.input))
    throw usage_error(fmt::format(
        "{}: encoder copy reads its input twice (the video, and the audio beside it), and a "
        "pipe or a live feed cannot be read again: save it to a file first, or choose an encoder",
        o.input));
  if (!refused.empty())
    throw usage_error(fmt::format(
        "encoder copy remuxes the video without decoding it, so it cannot apply {}: leave "
        "{} out, or choose an encoder (encoder libx264…){}",
        fmt::join(refused, ", "), refused.size() == 1 ? "it" : "them",
        cut ? "; smart_cut makes a copy cut exact, re-encoding only its edges" : ""));
  if (o.smart_cut) {
    check_options(o);  // the cut's own sense (to after ss…)
    check_smart_cut(o);
  }
}

TranscodeReport stream_copy(const TranscodeOptions& o, const RunHooks& hooks) {
  check_stream_copy(o);
  if (o.smart_cut) return smart_cut(o, hooks);
  const auto t0 = std::chrono::steady_clock::now();
  const double origin_s = input_origin_s(open_input(o.input).get());  // probed, not read
  JoinRequest request;
  request.parts = {
      {.path = o.input, .shift_s = -origin_s}};  // the output's clock starts at the input's start
  if (o.audio != AudioMode::kNone) request.audio_from = o.input;
  request.audio_start_s = origin_s;
  // --audio copy: a track the output cannot hold refuses the copy; auto leaves it out (a
  // warning names it).
  request.every_audio_track = o.audio == AudioMode::kCopy;
  request.output = o.output;
  request.interrupt = hooks.interrupt;
  request.metadata = true;  // the title and chapters, on the output's clock
  const JoinResult done = join_parts(request);
  TranscodeReport r = copy_report(o);
  count_join(r, done);
  if (done.chapters < 0) r.notes.emplace_back("chapters left out: the container holds none");
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.notes.push_back(fmt::format("stream copy: {} video packets, not decoded; {} audio packets{}",
                                done.video_packets, done.audio_packets,
                                o.audio == AudioMode::kNone ? " (audio none: no audio)" : ""));
  return r;
}

}  // namespace vpipe
