#include "vpipe/pipeline/io/audio_encode.hpp"

#include <fmt/format.h>

#include <array>
#include <iterator>
#include <string_view>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/containers.hpp"

namespace vpipe {

AVCodecID usual_audio_codec(const AVOutputFormat* container) {
  if (container_holds(container, AV_CODEC_ID_AAC).value_or(false)) return AV_CODEC_ID_AAC;
  return container->audio_codec;
}

namespace {

// The encoder's sample format nearest the decoder's: the same where it takes it, else its first.
AVSampleFormat sample_format_for(const AVCodec* codec, AVSampleFormat want) {
  if (!codec->sample_fmts) return want;
  for (const AVSampleFormat* f = codec->sample_fmts; *f != AV_SAMPLE_FMT_NONE; ++f)
    if (*f == want) return want;
  return codec->sample_fmts[0];
}

// The input's rate where the encoder takes it, else the encoder's nearest above (Opus: 48 kHz).
int sample_rate_for(const AVCodec* codec, int want) {
  if (!codec->supported_samplerates) return want;
  int best = 0;
  for (const int* r = codec->supported_samplerates; *r; ++r) {
    if (*r == want) return want;
    if ((*r > want && (best < want || *r < best)) || (best<want&& * r> best)) best = *r;
  }
  return best;
}

// libopus codes 3 to 8 channels only in Vorbis's orders (its mapping family 1), yet lists
// no layouts: FFmpeg's own tool fails on AC3's 5.1(side) ("Invalid channel layout").
const AVChannelLayout* vorbis_layouts() {
  static const auto list = [] {
    constexpr std::uint64_t kMasks[] = {AV_CH_LAYOUT_MONO,         AV_CH_LAYOUT_STEREO,
                                        AV_CH_LAYOUT_SURROUND,     AV_CH_LAYOUT_QUAD,
                                        AV_CH_LAYOUT_5POINT0_BACK, AV_CH_LAYOUT_5POINT1_BACK,
                                        AV_CH_LAYOUT_6POINT1,      AV_CH_LAYOUT_7POINT1};
    std::array<AVChannelLayout, std::size(kMasks) + 1> l{};  // the last, all zero, ends it
    for (std::size_t i = 0; i < std::size(kMasks); ++i)
      av_channel_layout_from_mask(&l[i], kMasks[i]);
    return l;
  }();
  return list.data();
}

// The input's channel layout where the encoder takes it (an unordered one read as the usual
// order of its count), else the encoder's of as many channels (5.1(side) into libopus:
// 5.1(back), the resampler moving the side pair there), else its widest of fewer, else its
// first, as FFmpeg's own tool negotiates.
void channel_layout_for(const AVCodec* codec, const AVChannelLayout& in, AVChannelLayout* out) {
  av_check(av_channel_layout_copy(out, &in), "audio channel layout");
  if (out->order == AV_CHANNEL_ORDER_UNSPEC) av_channel_layout_default(out, out->nb_channels);
  const AVChannelLayout* list = codec->ch_layouts                            ? codec->ch_layouts
                                : std::string_view(codec->name) == "libopus" ? vorbis_layouts()
                                                                             : nullptr;
  if (!list || !list[0].nb_channels) return;
  const AVChannelLayout *same = nullptr, *fewer = nullptr;
  for (const AVChannelLayout* l = list; l->nb_channels; ++l) {
    if (!av_channel_layout_compare(l, out)) return;
    if (l->nb_channels == out->nb_channels && !same) same = l;
    if (l->nb_channels < out->nb_channels && (!fewer || l->nb_channels > fewer->nb_channels))
      fewer = l;
  }
  const AVChannelLayout* pick = same ? same : fewer ? fewer : &list[0];
  av_channel_layout_uninit(out);
  av_check(av_channel_layout_copy(out, pick), "audio channel layout");
}

}  // namespace

AudioReencoder::AudioReencoder(const AVStream* in, const AVCodec* codec, const AudioShape& shape)
    : in_tb_(in->time_base) {
  decoder_ = open_stream_decoder(in, "audio");
  encoder_.reset(avcodec_alloc_context3(codec));
  AVCodecContext* e = encoder_.get();
  e->sample_fmt = sample_format_for(codec, decoder_->sample_fmt);
  e->sample_rate = sample_rate_for(codec, shape.rate > 0 ? shape.rate : decoder_->sample_rate);
  AVChannelLayout want{};
  if (shape.channels > 0)
    av_channel_layout_default(&want, shape.channels);
  else
    av_check(av_channel_layout_copy(&want, &decoder_->ch_layout), "audio channel layout");
  channel_layout_for(codec, want, &e->ch_layout);
  av_channel_layout_uninit(&want);
  if (shape.exact && shape.rate > 0 && e->sample_rate != shape.rate)
    throw usage_error(
        fmt::format("audio_rate {}: encoder {} takes no such rate", shape.rate, codec->name));
  if (shape.exact && shape.channels > 0 && e->ch_layout.nb_channels != shape.channels)
    throw usage_error(fmt::format("audio_channels {}: encoder {} codes no {} channels",
                                  shape.channels, codec->name, shape.channels));
  e->time_base = {1, e->sample_rate};
  if (shape.bitrate > 0) e->bit_rate = shape.bitrate;
  if (shape.global_header) e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  char layout[64] = "";  // (a failed open clears it)
  av_channel_layout_describe(&e->ch_layout, layout, sizeof layout);
  if (const int ret = avcodec_open2(e, codec, nullptr); ret < 0)
    throw input_error(fmt::format("cannot open audio encoder {} for {} Hz, {}: {}", codec->name,
                                  e->sample_rate, layout, av_error_text(ret)));
  SwrContext* swr = nullptr;
  AVChannelLayout in_layout{};
  av_channel_layout_copy(&in_layout, &decoder_->ch_layout);
  if (in_layout.order == AV_CHANNEL_ORDER_UNSPEC)
    av_channel_layout_default(&in_layout, in_layout.nb_channels);
  const int ret =
      swr_alloc_set_opts2(&swr, &e->ch_layout, e->sample_fmt, e->sample_rate, &in_layout,
                          decoder_->sample_fmt, decoder_->sample_rate, 0, nullptr);
  av_channel_layout_uninit(&in_layout);
  swr_.reset(swr);
  if (ret < 0 || swr_init(swr) < 0) throw input_error("cannot set up the audio resampler");
  fifo_.reset(av_audio_fifo_alloc(e->sample_fmt, e->ch_layout.nb_channels, 4096));
  if (!fifo_) throw std::bad_alloc();
}

void AudioReencoder::convert(const AVFrame* in) {
  const AVCodecContext* e = encoder_.get();
  const int room = swr_get_out_samples(swr_.get(), in ? in->nb_samples : 0);
  if (room <= 0) return;
  UniqueAVFrame out = make_av_frame();
  out->format = e->sample_fmt;
  out->sample_rate = e->sample_rate;
  av_channel_layout_copy(&out->ch_layout, &e->ch_layout);
  out->nb_samples = room;
  av_check(av_frame_get_buffer(out.get(), 0), "audio frame");
  const int n = swr_convert(swr_.get(), out->data, room,
                            in ? const_cast<const std::uint8_t**>(in->extended_data) : nullptr,
                            in ? in->nb_samples : 0);
  if (n > 0 && av_audio_fifo_write(fifo_.get(), reinterpret_cast<void**>(out->data), n) < n)
    throw std::bad_alloc();
}

void AudioReencoder::encode(const AVFrame* frame, std::vector<UniqueAVPacket>& out) {
  if (avcodec_send_frame(encoder_.get(), frame) < 0) {
    ++errors_;
    return;
  }
  for (;;) {
    UniqueAVPacket pkt = make_av_packet();
    if (avcodec_receive_packet(encoder_.get(), pkt.get()) < 0) return;
    out.push_back(std::move(pkt));
  }
}

// Whole encoder frames out of the FIFO (all: the last, shorter one too).
void AudioReencoder::drain_fifo(bool all, std::vector<UniqueAVPacket>& out) {
  const AVCodecContext* e = encoder_.get();
  const int size = e->frame_size > 0 ? e->frame_size : 1024;
  while (av_audio_fifo_size(fifo_.get()) >= size || (all && av_audio_fifo_size(fifo_.get()) > 0)) {
    UniqueAVFrame f = make_av_frame();
    f->nb_samples = std::min(size, av_audio_fifo_size(fifo_.get()));
    f->format = e->sample_fmt;
    f->sample_rate = e->sample_rate;
    av_channel_layout_copy(&f->ch_layout, &e->ch_layout);
    av_check(av_frame_get_buffer(f.get(), 0), "audio frame");
    av_audio_fifo_read(fifo_.get(), reinterpret_cast<void**>(f->data), f->nb_samples);
    f->pts = next_pts_;
    next_pts_ += f->nb_samples;
    encode(f.get(), out);
  }
}

std::vector<UniqueAVPacket> AudioReencoder::push(const AVPacket* pkt) {
  std::vector<UniqueAVPacket> out;
  if (avcodec_send_packet(decoder_.get(), pkt) < 0 && pkt) {
    ++errors_;
    return out;
  }
  for (;;) {
    UniqueAVFrame f = make_av_frame();
    if (avcodec_receive_frame(decoder_.get(), f.get()) < 0) break;
    if (next_pts_ == AV_NOPTS_VALUE)  // the first frame's time, in the encoder's samples
      next_pts_ = f->best_effort_timestamp == AV_NOPTS_VALUE
                      ? 0
                      : av_rescale_q(f->best_effort_timestamp, in_tb_, encoder_->time_base);
    convert(f.get());
    drain_fifo(false, out);
  }
  if (!pkt) {  // the end: what the resampler and the FIFO hold, then the encoder's delay
    if (next_pts_ == AV_NOPTS_VALUE) next_pts_ = 0;
    convert(nullptr);
    drain_fifo(true, out);
    encode(nullptr, out);
  }
  return out;
}

}  // namespace vpipe
