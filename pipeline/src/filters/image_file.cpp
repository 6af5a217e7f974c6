#include "vpipe/pipeline/filters/image_file.hpp"

#include <fmt/format.h>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

namespace {

// The first video frame of `path`, decoded.
UniqueAVFrame decode_first_picture(const std::string& path) {
  AVFormatContext* raw = nullptr;
  AVDictionary* opts = nullptr;  // a picture is a local file: no protocol reaches beyond it
  av_dict_set(&opts, "protocol_whitelist", "file", 0);
  const int ret = avformat_open_input(&raw, path.c_str(), nullptr, &opts);
  av_dict_free(&opts);
  if (ret < 0)
    throw input_error(fmt::format("{}: cannot open the picture: {}", path, av_error_text(ret)));
  UniqueDemuxContext in(raw);
  avformat_find_stream_info(in.get(), nullptr);
  const AVCodec* codec = nullptr;
  const int index = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (index < 0 || !codec) throw input_error(fmt::format("{}: not a picture", path));
  UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
  av_check(avcodec_parameters_to_context(dec.get(), in->streams[index]->codecpar), path);
  av_check(avcodec_open2(dec.get(), codec, nullptr), path);
  UniqueAVPacket pkt = make_av_packet();
  UniqueAVFrame frame = make_av_frame();
  bool flushed = false;
  while (true) {
    const int got = avcodec_receive_frame(dec.get(), frame.get());
    if (got == 0) return frame;
    if (got != AVERROR(EAGAIN) || flushed) break;
    if (av_read_frame(in.get(), pkt.get()) < 0) {
      avcodec_send_packet(dec.get(), nullptr);  // the end: drain the decoder
      flushed = true;
      continue;
    }
    if (pkt->stream_index == index) avcodec_send_packet(dec.get(), pkt.get());
    av_packet_unref(pkt.get());
  }
  throw input_error(fmt::format("{}: no picture could be decoded", path));
}

}  // namespace

Frame load_image_rgba(const std::string& path) {
  const UniqueAVFrame src = decode_first_picture(path);
  Frame out = Frame::allocate_host({AV_PIX_FMT_RGBA, src->width, src->height});
  UniqueSwsContext sws(
      sws_getContext(src->width, src->height, static_cast<AVPixelFormat>(src->format), src->width,
                     src->height, AV_PIX_FMT_RGBA, SWS_POINT, nullptr, nullptr, nullptr));
  if (!sws) throw input_error(fmt::format("{}: cannot convert its pixels to RGBA", path));
  std::uint8_t* dst[4] = {out.planes[0].data, nullptr, nullptr, nullptr};
  const int pitch[4] = {static_cast<int>(out.planes[0].pitch), 0, 0, 0};
  sws_scale(sws.get(), src->data, src->linesize, 0, src->height, dst, pitch);
  return out;
}

}  // namespace vpipe
