// How each encoder takes vpipe's quality options (crf, preset, qscale, level, bitrate): one
// table, the only place that knows. An option an encoder does not take is refused before the
// first frame, naming the option and the encoder; none is accepted and then dropped.
//
// Adding an encoder: one row in encoder_controls.cpp. An encoder without a row takes none of
// crf, preset, qscale or level (each is refused, pointing at --encoder-option), and takes
// --bitrate, --maxrate and --bufsize unless FFmpeg calls its codec lossless only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
}

#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe {

// Where an encoder reads --level from.
enum class LevelFrom {
  kNone,        // it writes no level it is given: refused
  kOwn,         // its own "level" option (libx264 "4.1", NVENC, libvpx-vp9)
  kX265Params,  // x265's level-idc, through x265-params (the wrapper reads no other)
  kContext,     // the codec context's integer level (MPEG-1/2/4 part 2 headers)
};

// How an encoder takes a bit rate.
enum class RateControl {
  kBitrate,   // --bitrate, capped by --maxrate/--bufsize (the codec context's)
  kVbvPair,   // the same, the caps only as a pair (x264 and x265 drop one given alone)
  kCrfUnder,  // the same, and its crf needs the bit rate too (VP8: quality capped by it)
  kNone,      // none: it codes each frame to its profile's size (ProRes), or losslessly
};

struct EncoderControls {
  std::string_view encoder{};         // FFmpeg's encoder name
  std::string_view crf{};             // its constant-quality option ("crf", "cq"); empty: none
  int crf_max = 0;                    // the worst quality its scale goes to
  bool crf_fraction = false;          // it takes a fractional crf (18.5), else whole numbers only
  std::string_view preset{};          // its speed option; empty: none
  std::string_view default_preset{};  // vpipe's when none is given (empty: the encoder's own)
  std::optional<int> default_crf{};   // vpipe's when neither crf nor bitrate is given
  LevelFrom level = LevelFrom::kNone;
  RateControl rates = RateControl::kBitrate;
  bool qscale = false;  // a fixed quantizer 2..31: global_quality, read from each frame
  std::optional<int> default_qscale{};  // vpipe's when neither qscale nor bitrate is given
  // The presets it takes, checked before the run (an encoder checks them only when it opens,
  // and SVT-AV1 is opened for the first time with the first frame); empty: the open checks.
  std::vector<std::string_view> presets{};
};

// The row for `codec`, or null for an encoder vpipe has no row for.
[[nodiscard]] const EncoderControls* controls_of(const AVCodec* codec);
// Every row, in the table's order (the encoders vpipe knows the options of).
[[nodiscard]] const std::vector<EncoderControls>& encoder_controls();
// "libx264, libx265, …": the encoders taking an option (for --help and docs/OPTIONS.md).
[[nodiscard]] std::string encoders_taking(std::string_view option);

// Refuses (usage_error) every quality option of `o` that `codec` does not take, and the pairs
// no encoder does one thing with (crf with bitrate: one is the rate control), naming the
// option, the encoder and what to give instead. Called when the encoder is chosen.
void check_controls(const AVCodec* codec, const TranscodeOptions& o);

// Puts `o`'s quality options on `enc` (before it opens) the way its row says: into `opts`
// for the encoder's own options, or the context's fields. check_controls has passed.
void apply_controls(AVCodecContext* enc, const AVCodec* codec, const TranscodeOptions& o,
                    AVDictionary*& opts);

// Adds KEY=VALUE to a library's own list in `opts` ("x264-params", "x265-params"), after
// those there: the library reads them in order, the last value of a key winning.
void add_library_param(AVDictionary*& opts, const char* list, const std::string& kv);

}  // namespace vpipe
