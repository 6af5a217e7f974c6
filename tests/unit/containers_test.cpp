// Container facts against FFmpeg's own muxers, generated rather than listed: every muxer of
// this FFmpeg that writes a file with an extension, × every encoder it has, with the
// parameters that encoder really gives (its extradata included). Where vpipe says a
// container holds a codec (container_holds: the plan picks encoders and audio codecs by it),
// the muxer's header must take a stream of it. The oracle is the muxer, its header written
// into memory by this test; no vpipe code decides what a case expects.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
}

#include "../e2e/media_check.hpp"
#include "vpipe/pipeline/io/containers.hpp"
#include "vpipe/pipeline/session/codec_open.hpp"

namespace {

struct Encoded {
  const AVCodec* codec;
  vpipe::UniqueAVCodecParameters par;
};

// The parameters `codec` gives when opened on a plain 352x288 picture or 48 kHz stereo, or
// nothing where it does not open so (hardware, experimental, fixed sizes).
std::optional<Encoded> open_encoder(const AVCodec* codec) {
  if ((codec->capabilities & (AV_CODEC_CAP_HARDWARE | AV_CODEC_CAP_EXPERIMENTAL)) ||
      !vpipe::closes_without_frames(codec))
    return {};
  vpipe::UniqueAVCodecContext c(avcodec_alloc_context3(codec));
  if (codec->type == AVMEDIA_TYPE_VIDEO) {
    c->width = 352;
    c->height = 288;
    c->pix_fmt = codec->pix_fmts ? codec->pix_fmts[0] : AV_PIX_FMT_YUV420P;
    c->time_base = {1, 25};
    c->framerate = {25, 1};
  } else if (codec->type == AVMEDIA_TYPE_AUDIO) {
    c->sample_fmt = codec->sample_fmts ? codec->sample_fmts[0] : AV_SAMPLE_FMT_S16;
    c->sample_rate = codec->supported_samplerates ? codec->supported_samplerates[0] : 48000;
    for (const int* r = codec->supported_samplerates; r && *r; ++r)
      if (*r == 48000) c->sample_rate = 48000;
    av_channel_layout_default(&c->ch_layout, 2);
    c->time_base = {1, c->sample_rate};
  } else {
    return {};
  }
  c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;  // the extradata an MP4 or Matroska header needs
  if (avcodec_open2(c.get(), codec, nullptr) < 0) return {};
  Encoded e{codec, vpipe::UniqueAVCodecParameters(avcodec_parameters_alloc())};
  if (avcodec_parameters_from_context(e.par.get(), c.get()) < 0) return {};
  return e;
}

// Whether `format`'s header takes streams of `pars` (0) or what it returned.
int header_takes(const AVOutputFormat* format, std::vector<const AVCodecParameters*> pars) {
  AVFormatContext* raw = nullptr;
  if (avformat_alloc_output_context2(&raw, format, nullptr, nullptr) < 0) return -1;
  for (const AVCodecParameters* par : pars) {
    AVStream* s = avformat_new_stream(raw, nullptr);
    (void)avcodec_parameters_copy(s->codecpar, par);
    s->time_base =
        par->codec_type == AVMEDIA_TYPE_AUDIO ? AVRational{1, par->sample_rate} : AVRational{1, 25};
    s->avg_frame_rate = {25, 1};
  }
  (void)avio_open_dyn_buf(&raw->pb);
  const int ret = avformat_write_header(raw, nullptr);
  std::uint8_t* bytes = nullptr;
  (void)avio_close_dyn_buf(raw->pb, &bytes);
  av_free(bytes);
  raw->pb = nullptr;
  avformat_free_context(raw);
  return ret;
}

// The containers a user of vpipe writes, by the names they give their files.
const char* const kExtensions[] = {"mp4", "m4v",  "mov",  "mkv",  "mka",  "webm", "ts",  "m2ts",
                                   "mpg", "vob",  "avi",  "flv",  "mxf",  "ogg",  "ogv", "nut",
                                   "asf", "wmv",  "3gp",  "gif",  "y4m",  "wav",  "mp3", "aac",
                                   "ac3", "flac", "opus", "h264", "hevc", "ivf"};

// A video stream `format` takes by itself, to go beside an audio stream (MXF and DV hold no
// audio alone, nor does vpipe write any): null where none is held.
const AVCodecParameters* video_beside(const AVOutputFormat* format,
                                      const std::vector<Encoded>& encoders) {
  for (const auto& e : encoders)
    if (e.par->codec_type == AVMEDIA_TYPE_VIDEO &&
        vpipe::container_holds(format, e.codec->id) == true &&
        header_takes(format, {e.par.get()}) >= 0)
      return e.par.get();
  return nullptr;
}

TEST(Containers, WhatVpipeSaysAContainerHoldsItsMuxerTakes) {
  if (vpipe::test::kUnderAsan)
    GTEST_SKIP() << "opens every encoder this FFmpeg has, whose libraries keep blocks of their "
                    "own (not vpipe's); the release pass runs it";
  av_log_set_level(AV_LOG_QUIET);  // thousands of trial headers
  std::vector<Encoded> encoders;
  void* it = nullptr;
  while (const AVCodec* codec = av_codec_iterate(&it))
    if (av_codec_is_encoder(codec))
      if (auto e = open_encoder(codec)) encoders.push_back(std::move(*e));
  int pairs = 0, held = 0;
  std::vector<std::string> wrong;
  for (const char* ext : kExtensions) {
    const AVOutputFormat* format = vpipe::output_container(std::string("out.") + ext);
    ASSERT_NE(format, nullptr) << ext;
    const AVCodecParameters* video = video_beside(format, encoders);
    for (const auto& e : encoders) {
      ++pairs;
      if (vpipe::container_holds(format, e.codec->id) != true) continue;
      ++held;
      // The rate a container needs is vpipe's to set (container_sample_rate): asked at it.
      vpipe::UniqueAVCodecParameters par(avcodec_parameters_alloc());
      (void)avcodec_parameters_copy(par.get(), e.par.get());
      if (par->codec_type == AVMEDIA_TYPE_AUDIO)
        if (const int rate = vpipe::container_sample_rate(format, par->codec_id, par->sample_rate))
          par->sample_rate = rate;
      std::vector<const AVCodecParameters*> streams{par.get()};
      if (par->codec_type == AVMEDIA_TYPE_AUDIO && video) streams.insert(streams.begin(), video);
      if (const int ret = header_takes(format, streams); ret < 0)
        wrong.push_back(std::string(ext) + " (" + format->name + ") + " + e.codec->name + ": " +
                        vpipe::av_error_text(ret));
    }
  }
  av_log_set_level(AV_LOG_INFO);
  std::printf("containers: %zu encoders × %zu containers: %d pairs, %d said held\n",
              encoders.size(), std::size(kExtensions), pairs, held);
  EXPECT_GT(encoders.size(), 20u);
  EXPECT_GT(held, 200);
  std::string list;
  for (const auto& w : wrong) list += "\n  " + w;
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " said held, refused by the muxer:" << list;
}

}  // namespace
