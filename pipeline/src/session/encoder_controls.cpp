#include "vpipe/pipeline/session/encoder_controls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

extern "C" {
#include <libavutil/opt.h>
}

#include "vpipe/base/errors.hpp"

namespace vpipe {

namespace {

const std::vector<std::string_view> kX26xPresets = {"ultrafast", "superfast", "veryfast", "faster",
                                                    "fast",      "medium",    "slow",     "slower",
                                                    "veryslow",  "placebo"};

// A fixed-quantizer encoder of FFmpeg's MPEG family: qscale, and the level in its header.
EncoderControls mpeg_family(std::string_view name, LevelFrom level) {
  return {.encoder = name, .level = level, .qscale = true, .default_qscale = 3};
}

EncoderControls nvenc(std::string_view name) {
  return {.encoder = name,
          .crf = "cq",
          .crf_max = 51,
          .crf_fraction = true,
          .preset = "preset",
          .default_preset = "p4",
          .default_crf = 23,
          .level = LevelFrom::kOwn};
}

// What each encoder does with the options, read from FFmpeg 5.1's wrappers (libx265 reads no
// context level; libvpx-vp9 and libaom code constant quality when no bit rate is given) and
// checked by tests/e2e/encoder_controls_test.cpp against the ffmpeg tool.
EncoderControls x264(std::string_view name) {
  return {.encoder = name,
          .crf = "crf",
          .crf_max = 51,
          .crf_fraction = true,
          .preset = "preset",
          .default_preset = "veryfast",
          .default_crf = 23,
          .level = LevelFrom::kOwn,
          .rates = RateControl::kVbvPair,
          .presets = kX26xPresets};
}

std::vector<EncoderControls> make_rows() {  // long: the table itself, a row per encoder
  return {
      x264("libx264"),
      x264("libx264rgb"),
      {.encoder = "libx265",
       .crf = "crf",
       .crf_max = 51,
       .crf_fraction = true,
       .preset = "preset",
       .level = LevelFrom::kX265Params,
       .rates = RateControl::kVbvPair,
       .presets = kX26xPresets},
      // VP9's level is a target its rate control keeps to; no header carries it back.
      {.encoder = "libvpx-vp9", .crf = "crf", .crf_max = 63},
      // VP8's crf caps quality under a bit rate it still needs (FFmpeg's docs).
      {.encoder = "libvpx", .crf = "crf", .crf_max = 63, .rates = RateControl::kCrfUnder},
      {.encoder = "libaom-av1", .crf = "crf", .crf_max = 63},
      {.encoder = "libsvtav1",
       .crf = "crf",
       .crf_max = 63,
       .preset = "preset",
       .presets = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13"}},
      nvenc("h264_nvenc"),
      nvenc("hevc_nvenc"),
      nvenc("av1_nvenc"),
      mpeg_family("mpeg4", LevelFrom::kContext),
      mpeg_family("mpeg2video", LevelFrom::kContext),
      mpeg_family("mpeg1video", LevelFrom::kNone),
      mpeg_family("h263", LevelFrom::kNone),
      mpeg_family("h263p", LevelFrom::kNone),
      mpeg_family("msmpeg4v2", LevelFrom::kNone),
      mpeg_family("msmpeg4", LevelFrom::kNone),
      mpeg_family("wmv1", LevelFrom::kNone),
      mpeg_family("wmv2", LevelFrom::kNone),
      mpeg_family("flv", LevelFrom::kNone),
      mpeg_family("mjpeg", LevelFrom::kNone),
      mpeg_family("libxvid", LevelFrom::kNone),
      // ProRes codes each frame to its profile's size: a bit rate does nothing.
      {.encoder = "prores", .rates = RateControl::kNone},
      {.encoder = "prores_aw", .rates = RateControl::kNone},
      {.encoder = "prores_ks", .rates = RateControl::kNone},
  };
}

bool lossless_only(const AVCodec* codec) {
  const AVCodecDescriptor* d = avcodec_descriptor_get(codec->id);
  return d && (d->props & AV_CODEC_PROP_LOSSLESS) && !(d->props & AV_CODEC_PROP_LOSSY);
}

std::string instead(std::string_view option, const AVCodec* codec) {
  return fmt::format(
      "encoder {} takes no {} (vpipe would not apply it); give the encoder's own option with "
      "encoder_option KEY=VALUE (`ffmpeg -h encoder={}` lists them)",
      codec->name, option, codec->name);
}

}  // namespace

const std::vector<EncoderControls>& encoder_controls() {
  static const std::vector<EncoderControls> rows = make_rows();
  return rows;
}

const EncoderControls* controls_of(const AVCodec* codec) {
  const auto& rows = encoder_controls();
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const EncoderControls& r) { return r.encoder == codec->name; });
  return it == rows.end() ? nullptr : &*it;
}

std::string encoders_taking(std::string_view option) {
  std::string out;
  for (const auto& r : encoder_controls()) {
    const bool takes = option == "crf"      ? !r.crf.empty()
                       : option == "preset" ? !r.preset.empty()
                       : option == "qscale" ? r.qscale
                                            : r.level != LevelFrom::kNone;
    if (takes) out += fmt::format("{}{}", out.empty() ? "" : ", ", r.encoder);
  }
  return out;
}

namespace {

[[noreturn]] void refuse(const TranscodeOptions& o, const std::string& why) {
  throw usage_error(fmt::format("{}: {}", o.output, why));
}

// crf, qscale, preset and level: each one the row takes, in its range and form.
void check_quality(const EncoderControls& r, const AVCodec* codec, const TranscodeOptions& o) {
  if (o.crf && r.crf.empty()) refuse(o, instead("crf", codec));
  if (o.crf && (*o.crf > r.crf_max || (!r.crf_fraction && *o.crf != std::floor(*o.crf))))
    refuse(o, fmt::format("crf {}: encoder {} takes {}0..{}", *o.crf, codec->name,
                          r.crf_fraction ? "" : "whole numbers ", r.crf_max));
  if (o.qscale && !r.qscale) refuse(o, instead("qscale", codec));
  if (!o.preset.empty() && r.preset.empty()) refuse(o, instead("preset", codec));
  if (!o.preset.empty() && !r.presets.empty() &&
      std::find(r.presets.begin(), r.presets.end(), o.preset) == r.presets.end())
    refuse(o, fmt::format("preset {}: {} takes {}", o.preset, codec->name,
                          fmt::join(r.presets, ", ")));
  if (!o.level.empty() && r.level == LevelFrom::kNone) refuse(o, instead("level", codec));
  if (!o.level.empty() && r.level == LevelFrom::kContext &&
      o.level.find_first_not_of("0123456789") != std::string::npos)
    refuse(o, fmt::format("level {}: {} writes a whole number in its header (e.g. level 4)",
                          o.level, codec->name));
  if (!o.level.empty() && codec->id == AV_CODEC_ID_MPEG2VIDEO && o.profile.empty())
    refuse(o, fmt::format("level {}: {} writes a level with its profile only: add profile 4 "
                          "(main) or 1 (high)",
                          o.level, codec->name));
}

// bitrate, maxrate and bufsize: one rate control, and caps where the encoder reads them.
void check_rates(const EncoderControls& r, const AVCodec* codec, const TranscodeOptions& o) {
  if ((o.bitrate || o.maxrate || o.bufsize) &&
      (r.rates == RateControl::kNone || lossless_only(codec)))
    refuse(o, fmt::format("encoder {} takes no bit rate ({}): bitrate, maxrate and bufsize would "
                          "do nothing",
                          codec->name,
                          lossless_only(codec) ? "it is lossless" : "it codes to its profile"));
  if (o.crf && o.bitrate && r.rates != RateControl::kCrfUnder)
    refuse(o, fmt::format("crf and bitrate are two rate controls, encoder {} would use one: give "
                          "crf (with maxrate and bufsize to cap it) or bitrate",
                          codec->name));
  if (o.crf && !o.bitrate && r.rates == RateControl::kCrfUnder)
    refuse(o, fmt::format("crf: encoder {} caps its quality under a bit rate: give bitrate too",
                          codec->name));
  if (o.qscale && o.bitrate)
    refuse(o, fmt::format("qscale and bitrate are two rate controls, encoder {} would use one: "
                          "give one",
                          codec->name));
  if ((o.maxrate || o.bufsize) && !o.bitrate && r.qscale)
    refuse(o, fmt::format("maxrate and bufsize cap a bit rate; encoder {} codes a fixed "
                          "quantizer (qscale) unless bitrate is given",
                          codec->name));
  if (r.rates == RateControl::kVbvPair && o.maxrate.has_value() != o.bufsize.has_value())
    refuse(o, fmt::format("{} without {}: encoder {} caps the rate with both or neither",
                          o.maxrate ? "maxrate" : "bufsize", o.maxrate ? "bufsize" : "maxrate",
                          codec->name));
}

// An encoder_option setting what a vpipe option given sets too: one would win unsaid.
void check_twice(const EncoderControls& r, const AVCodec* codec, const TranscodeOptions& o) {
  for (const auto& kv : o.encoder_options) {
    const std::string key = kv.substr(0, kv.find('='));
    const bool clash = (!r.crf.empty() && key == r.crf && (o.crf || o.bitrate || o.qscale)) ||
                       (!r.preset.empty() && key == r.preset && !o.preset.empty()) ||
                       (key == "b" && (o.bitrate || o.crf || o.qscale)) ||
                       (key == "level" && !o.level.empty()) ||
                       (key == "profile" && !o.profile.empty());
    if (clash)
      refuse(o, fmt::format("encoder_option {} and vpipe's own option both set {}'s {}: give one",
                            kv, codec->name, key));
  }
}

}  // namespace

void check_controls(const AVCodec* codec, const TranscodeOptions& o) {
  static const EncoderControls kNoRow{};
  const EncoderControls& r = controls_of(codec) ? *controls_of(codec) : kNoRow;
  check_quality(r, codec, o);
  check_rates(r, codec, o);
  check_twice(r, codec, o);
}

void apply_controls(AVCodecContext* enc, const AVCodec* codec, const TranscodeOptions& o,
                    AVDictionary*& opts) {
  if (o.bitrate) enc->bit_rate = *o.bitrate;
  const EncoderControls* r = controls_of(codec);
  if (!r) return;
  const std::optional<double> crf = o.crf       ? o.crf
                                    : o.bitrate ? std::nullopt
                                                : std::optional<double>(r->default_crf);
  if (crf) {
    av_dict_set(&opts, std::string(r->crf).c_str(), fmt::format("{}", *crf).c_str(), 0);
    // libvpx and libaom code constant quality only with no bit rate (FFmpeg's default is one).
    if (!o.bitrate) enc->bit_rate = 0;
  }
  const std::string preset = o.preset.empty() ? std::string(r->default_preset) : o.preset;
  if (!preset.empty() && !r->preset.empty())  // (check_controls refused one it has not)
    av_dict_set(&opts, std::string(r->preset).c_str(), preset.c_str(), 0);
  if (const auto q = o.qscale ? o.qscale : o.bitrate ? std::nullopt : r->default_qscale) {
    enc->flags |= AV_CODEC_FLAG_QSCALE;
    enc->global_quality = FF_QP2LAMBDA * *q;
  }
  if (o.level.empty()) return;
  switch (r->level) {
    case LevelFrom::kOwn:
      av_dict_set(&opts, "level", o.level.c_str(), 0);
      break;
    case LevelFrom::kX265Params:
      add_library_param(opts, "x265-params", "level-idc=" + o.level);
      break;
    case LevelFrom::kContext:
      if (av_opt_set(enc, "level", o.level.c_str(), 0) < 0)
        throw usage_error(
            fmt::format("{}: encoder {} takes no level '{}'", o.output, codec->name, o.level));
      break;
    case LevelFrom::kNone:
      break;  // refused by check_controls
  }
}

void add_library_param(AVDictionary*& opts, const char* list, const std::string& kv) {
  const AVDictionaryEntry* was = av_dict_get(opts, list, nullptr, 0);
  const std::string all = was ? std::string(was->value) + ":" + kv : kv;
  av_dict_set(&opts, list, all.c_str(), 0);
}

}  // namespace vpipe
