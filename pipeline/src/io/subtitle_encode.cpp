#include "vpipe/pipeline/io/subtitle_encode.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/containers.hpp"

namespace vpipe {

namespace {

bool is_text(AVCodecID id) {
  const AVCodecDescriptor* d = avcodec_descriptor_get(id);
  return d && (d->props & AV_CODEC_PROP_TEXT_SUB) != 0;
}

struct SubtitleFree {
  void operator()(AVSubtitle* s) const { avsubtitle_free(s); }
};

constexpr AVRational kMilliseconds{1, 1000};

// The encoder named as the codec (FFmpeg's "ass", not the older "ssa" that comes first).
const AVCodec* encoder_for(AVCodecID id) {
  const AVCodec* named = avcodec_find_encoder_by_name(avcodec_get_name(id));
  return named && named->id == id ? named : avcodec_find_encoder(id);
}

}  // namespace

AVCodecID text_subtitle_codec(const AVOutputFormat* container, AVCodecID from) {
  if (!container || !is_text(from) || !avcodec_find_decoder(from)) return AV_CODEC_ID_NONE;
  // The muxer's own (WebVTT for WebM) first; MP4 and MOV name none, and hold mov_text.
  for (const AVCodecID to : {container->subtitle_codec, AV_CODEC_ID_MOV_TEXT, AV_CODEC_ID_WEBVTT,
                             AV_CODEC_ID_SUBRIP, AV_CODEC_ID_ASS})
    if (to != AV_CODEC_ID_NONE && is_text(to) && container_holds(container, to) == true &&
        encoder_for(to))
      return to;
  return AV_CODEC_ID_NONE;
}

SubtitleReencoder::SubtitleReencoder(const AVStream* in, AVCodecID to)
    : buffer_(std::size_t{1} << 20) {
  const AVCodec* codec = encoder_for(to);
  if (!codec) throw input_error(fmt::format("no encoder for {}", avcodec_get_name(to)));
  decoder_ = open_stream_decoder(in, "subtitle");
  encoder_.reset(avcodec_alloc_context3(codec));
  if (!encoder_) throw std::bad_alloc();
  AVCodecContext* e = encoder_.get();
  e->time_base = kMilliseconds;
  if (decoder_->subtitle_header_size > 0) {  // the styles: text encoders start from them
    const auto size = static_cast<std::size_t>(decoder_->subtitle_header_size);
    e->subtitle_header = static_cast<std::uint8_t*>(av_mallocz(size + 1));
    if (!e->subtitle_header) throw std::bad_alloc();
    std::memcpy(e->subtitle_header, decoder_->subtitle_header, size);
    e->subtitle_header_size = decoder_->subtitle_header_size;
  }
  if (const int ret = avcodec_open2(e, codec, nullptr); ret < 0)
    throw input_error(
        fmt::format("cannot open subtitle encoder {}: {}", codec->name, av_error_text(ret)));
}

// One packet, one cue: its time moves to the packet's (the encoder takes a
// cue that starts at 0), its length becomes the packet's duration.
std::vector<UniqueAVPacket> SubtitleReencoder::push(const AVPacket* pkt) {
  std::vector<UniqueAVPacket> out;
  if (!pkt) return out;  // text decoders hold nothing back
  AVSubtitle sub{};
  int got = 0;
  // FFmpeg 5.1 takes a non-const packet; it only reads it.
  if (avcodec_decode_subtitle2(decoder_.get(), &sub, &got, const_cast<AVPacket*>(pkt)) < 0) {
    ++errors_;
    return out;
  }
  if (!got) return out;
  const std::unique_ptr<AVSubtitle, SubtitleFree> held(&sub);
  if (sub.pts == AV_NOPTS_VALUE) {  // a cue with no time cannot be placed
    ++errors_;
    return out;
  }
  const std::int64_t pts =
      sub.pts + av_rescale_q(sub.start_display_time, kMilliseconds, AV_TIME_BASE_Q);
  sub.end_display_time = sub.end_display_time > sub.start_display_time
                             ? sub.end_display_time - sub.start_display_time
                             : 0;
  sub.start_display_time = 0;
  const int n = avcodec_encode_subtitle(encoder_.get(), buffer_.data(),
                                        static_cast<int>(buffer_.size()), &sub);
  if (n < 0) {
    ++errors_;
    return out;
  }
  if (n == 0) return out;  // nothing to show (an empty cue)
  UniqueAVPacket p = make_av_packet();
  av_check(av_new_packet(p.get(), n), "subtitle packet");
  std::memcpy(p->data, buffer_.data(), static_cast<std::size_t>(n));
  p->pts = p->dts = av_rescale_q(pts, AV_TIME_BASE_Q, encoder_->time_base);
  p->duration = av_rescale_q(sub.end_display_time, kMilliseconds, encoder_->time_base);
  out.push_back(std::move(p));
  return out;
}

}  // namespace vpipe
