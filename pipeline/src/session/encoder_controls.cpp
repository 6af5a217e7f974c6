#include "vpipe/pipeline/session/encoder_controls.hpp"

#include <fmt/format.h>

#include <algorithm>

extern "C" {
#include <libavutil/opt.h>
}

#include "vpipe/memory/errors.hpp"

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
          .preset = "preset",
          .default_preset = "p4",
          .default_crf = 23,
          .level = LevelFrom::kOwn};
}

// What each encoder does with the options, read from FFmpeg 5.1's wrappers (libx265 reads no
// context level; libvpx-vp9 and libaom code constant quality when no bit rate is given) and
// checked by tests/e2e/encoder_controls_test.cpp against the ffmpeg tool.
std::vector<EncoderControls> make_rows() {
  return {
      {.encoder = "libx264",
       .crf = "crf",
       .crf_max = 51,
       .preset = "preset",
       .default_preset = "veryfast",
       .default_crf = 23,
       .level = LevelFrom::kOwn,
       .presets = kX26xPresets},
      {.encoder = "libx265",
       .crf = "crf",
       .crf_max = 51,
       .preset = "preset",
       .level = LevelFrom::kX265Params,
       .presets = kX26xPresets},
      // VP9's level is a target its rate control keeps to; no header carries it back.
      {.encoder = "libvpx-vp9", .crf = "crf", .crf_max = 63},
      // VP8's crf caps quality under a bit rate it still needs (FFmpeg's docs): no crf alone.
      {.encoder = "libvpx"},
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

void check_controls(const AVCodec* codec, const TranscodeOptions& o) {
  static const EncoderControls kNoRow{};
  const EncoderControls& r = controls_of(codec) ? *controls_of(codec) : kNoRow;
  const auto refuse = [&](std::string_view option) {
    throw usage_error(fmt::format("{}: {}", o.output, instead(option, codec)));
  };
  if (o.crf && r.crf.empty()) refuse("crf");
  if (o.crf && *o.crf > r.crf_max)
    throw usage_error(fmt::format("{}: crf {}: encoder {} takes 0..{}", o.output, *o.crf,
                                  codec->name, r.crf_max));
  if (o.qscale && !r.qscale) refuse("qscale");
  if (!o.preset.empty() && r.preset.empty()) refuse("preset");
  if (!o.level.empty() && r.level == LevelFrom::kNone) refuse("level");
  if (o.bitrate && lossless_only(codec))
    throw usage_error(
        fmt::format("{}: encoder {} is lossless: it takes no bitrate", o.output, codec->name));
  if (o.crf && o.bitrate)
    throw usage_error(fmt::format(
        "{}: crf and bitrate are two rate controls, encoder {} would use one: give crf (with "
        "maxrate and bufsize to cap it) or bitrate",
        o.output, codec->name));
  if (o.qscale && o.bitrate)
    throw usage_error(fmt::format(
        "{}: qscale and bitrate are two rate controls, encoder {} would use one: give one",
        o.output, codec->name));
  if (!o.preset.empty() && !r.presets.empty() &&
      std::find(r.presets.begin(), r.presets.end(), o.preset) == r.presets.end())
    throw usage_error(fmt::format("{}: preset {}: {} takes {}", o.output, o.preset, codec->name,
                                  fmt::join(r.presets, ", ")));
}

void apply_controls(AVCodecContext* enc, const AVCodec* codec, const TranscodeOptions& o,
                    AVDictionary*& opts) {
  if (o.bitrate) enc->bit_rate = *o.bitrate;
  const EncoderControls* r = controls_of(codec);
  if (!r) return;
  const std::optional<int> crf = o.crf ? o.crf : o.bitrate ? std::nullopt : r->default_crf;
  if (crf) {
    av_dict_set(&opts, std::string(r->crf).c_str(), std::to_string(*crf).c_str(), 0);
    // libvpx and libaom code constant quality only with no bit rate (FFmpeg's default is one).
    if (!o.bitrate) enc->bit_rate = 0;
  }
  const std::string preset = o.preset.empty() ? std::string(r->default_preset) : o.preset;
  if (!preset.empty()) av_dict_set(&opts, std::string(r->preset).c_str(), preset.c_str(), 0);
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
