// The encoders vpipe has no row for (encoder_controls.hpp), from this FFmpeg build's own
// list: each quality option given to one is refused before any work, naming the option and
// the encoder, never accepted and dropped. The rows themselves are tried against the ffmpeg
// tool in tests/e2e/encoder_controls_test.cpp.
#include "vpipe/pipeline/session/encoder_controls.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vpipe/pipeline/session/codec_open.hpp"

namespace {

using vpipe::TranscodeOptions;

std::vector<const AVCodec*> video_encoders_without_a_row() {
  std::vector<const AVCodec*> out;
  void* it = nullptr;
  while (const AVCodec* c = av_codec_iterate(&it))
    if (av_codec_is_encoder(c) && c->type == AVMEDIA_TYPE_VIDEO && !vpipe::controls_of(c))
      out.push_back(c);
  return out;
}

bool lossless_only(const AVCodec* c) {
  const AVCodecDescriptor* d = avcodec_descriptor_get(c->id);
  return d && (d->props & AV_CODEC_PROP_LOSSLESS) && !(d->props & AV_CODEC_PROP_LOSSY);
}

TEST(EncoderControls, AnEncoderWithoutARowTakesNoQualityOption) {
  const std::vector<std::pair<std::string, std::function<void(TranscodeOptions&)>>> options = {
      {"crf", [](TranscodeOptions& o) { o.crf = 20; }},
      {"qscale", [](TranscodeOptions& o) { o.qscale = 5; }},
      {"preset", [](TranscodeOptions& o) { o.preset = std::string("slow"); }},
      {"level", [](TranscodeOptions& o) { o.level = std::string("4"); }},
  };
  const auto encoders = video_encoders_without_a_row();
  ASSERT_GT(encoders.size(), 50u) << "FFmpeg's list of encoders came back short";
  int cases = 0;
  for (const AVCodec* c : encoders) {
    for (const auto& [name, give] : options) {
      TranscodeOptions o;
      o.output = "out.mkv";
      o.encoder = c->name;
      give(o);
      try {
        vpipe::check_controls(c, o);
        ADD_FAILURE() << c->name << " accepted " << name;
      } catch (const vpipe::usage_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(name), std::string::npos) << what;
        EXPECT_NE(what.find(c->name), std::string::npos) << what;
      }
      ++cases;
    }
    TranscodeOptions o;
    o.output = "out.mkv";
    o.bitrate = 1'000'000;
    if (lossless_only(c))
      EXPECT_THROW(vpipe::check_controls(c, o), vpipe::usage_error) << c->name;
    else
      EXPECT_NO_THROW(vpipe::check_controls(c, o)) << c->name;
  }
  RecordProperty("cases", cases);
}

// Two rate controls at once are one too many for every encoder with a quality mode (VP8's crf
// is a cap under its bit rate: both or no crf).
TEST(EncoderControls, CrfOrQscaleWithABitRateIsRefusedEverywhere) {
  for (const auto& r : vpipe::encoder_controls()) {
    const AVCodec* c = avcodec_find_encoder_by_name(std::string(r.encoder).c_str());
    if (!c) continue;
    TranscodeOptions o;
    o.output = "out.mkv";
    o.bitrate = 1'000'000;
    if (!r.crf.empty() && r.rates != vpipe::RateControl::kCrfUnder) o.crf = 20;
    if (r.qscale) o.qscale = 5;
    if (!o.crf && !o.qscale) continue;
    EXPECT_THROW(vpipe::check_controls(c, o), vpipe::usage_error) << r.encoder;
  }
}

// vpipe's defaults stay what they were: libx264 at crf 23 and veryfast, the MPEG family at
// qscale 3, and nothing set for an encoder whose own defaults hold.
TEST(EncoderControls, DefaultsAreVpipesOrTheEncodersOwn) {
  const auto applied = [](const char* encoder) {
    const AVCodec* c = avcodec_find_encoder_by_name(encoder);
    vpipe::UniqueAVCodecContext enc(avcodec_alloc_context3(c));
    AVDictionary* opts = nullptr;
    vpipe::apply_controls(enc.get(), c, TranscodeOptions{}, opts);
    std::string out;
    for (const AVDictionaryEntry* e = nullptr;
         (e = av_dict_get(opts, "", e, AV_DICT_IGNORE_SUFFIX));)
      out += std::string(e->key) + "=" + e->value + " ";
    av_dict_free(&opts);
    if (enc->flags & AV_CODEC_FLAG_QSCALE)
      out += "q=" + std::to_string(enc->global_quality / FF_QP2LAMBDA);
    return out;
  };
  EXPECT_EQ(applied("libx264"), "crf=23 preset=veryfast ");
  EXPECT_EQ(applied("mpeg4"), "q=3");
  if (avcodec_find_encoder_by_name("libx265")) {
    EXPECT_EQ(applied("libx265"), "");
  }
}

// What each row says of rates, generated over the table: a cap given alone where the encoder
// caps with a pair, a cap on a fixed quantizer, a rate to an encoder without rate control, and
// an encoder_option setting what a vpipe option sets too: each refused, naming the encoder.
TEST(EncoderControls, RateOptionsAnEncoderWouldNotApplyAreRefused) {
  int cases = 0;
  for (const auto& r : vpipe::encoder_controls()) {
    const AVCodec* c = avcodec_find_encoder_by_name(std::string(r.encoder).c_str());
    if (!c) continue;
    const auto refused = [&](const std::function<void(TranscodeOptions&)>& give) {
      TranscodeOptions o;
      o.output = "out.mkv";
      give(o);
      ++cases;
      try {
        vpipe::check_controls(c, o);
        return false;
      } catch (const vpipe::usage_error& e) {
        return std::string(e.what()).find(c->name) != std::string::npos;
      }
    };
    SCOPED_TRACE(r.encoder);
    const bool rated = r.rates != vpipe::RateControl::kNone;
    EXPECT_EQ(refused([](auto& o) { o.bitrate = 1'000'000; }), !rated);
    EXPECT_EQ(refused([](auto& o) { o.maxrate = 1'000'000; }),
              !rated || r.qscale || r.rates == vpipe::RateControl::kVbvPair);
    EXPECT_EQ(refused([](auto& o) {
                o.bitrate = 1'000'000;
                o.maxrate = 2'000'000;
                o.bufsize = 4'000'000;
              }),
              !rated);
    if (!r.crf.empty()) {
      EXPECT_TRUE(refused([&](auto& o) {
        o.crf = 20;
        o.encoder_options = {std::string(r.crf) + "=30"};
      }));
      EXPECT_TRUE(refused([&](auto& o) {  // a bit rate through the encoder's own "b"
        o.crf = 20;
        o.encoder_options = {"b=1M"};
      }));
      EXPECT_EQ(refused([](auto& o) { o.crf = 20; }), r.rates == vpipe::RateControl::kCrfUnder);
      EXPECT_EQ(refused([](auto& o) { o.crf = 20.5; }), !r.crf_fraction);
    }
    if (!r.preset.empty()) {
      EXPECT_TRUE(refused([&](auto& o) {
        o.preset = r.presets.empty() ? std::string("p4") : std::string(r.presets.front());
        o.encoder_options = {std::string(r.preset) + "=x"};
      }));
    }
  }
  EXPECT_GE(cases, 60);
}

}  // namespace
