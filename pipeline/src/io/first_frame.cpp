#include "vpipe/pipeline/io/first_frame.hpp"

#include <exception>

#include "vpipe/pipeline/io/reencode.hpp"

namespace vpipe {

UniqueAVFrame first_frame(const std::function<UniqueDemuxContext()>& open_again, int index) {
  auto in = open_again();
  UniqueAVCodecContext dec;
  try {
    dec = open_stream_decoder(in->streams[index], "video");
  } catch (const std::exception&) {
    return nullptr;  // nothing to learn here: the session's own decoder will say why
  }
  auto pkt = make_av_packet();
  auto frame = make_av_frame();
  for (int n = 0; n < 500 && av_read_frame(in.get(), pkt.get()) >= 0; ++n) {
    const bool ours = pkt->stream_index == index && avcodec_send_packet(dec.get(), pkt.get()) >= 0;
    av_packet_unref(pkt.get());
    if (ours && avcodec_receive_frame(dec.get(), frame.get()) >= 0) return frame;
  }
  return nullptr;
}

bool codes_interlaced_frames(AVCodecID codec) {
  switch (codec) {
    case AV_CODEC_ID_DVVIDEO:
    case AV_CODEC_ID_PRORES:
    case AV_CODEC_ID_DNXHD:
    case AV_CODEC_ID_MJPEG:
    case AV_CODEC_ID_MPEG2VIDEO:
    case AV_CODEC_ID_H264:
    case AV_CODEC_ID_VC1:
    case AV_CODEC_ID_MPEG4:
      return true;
    default:
      return false;
  }
}

void settle_field_order(AVStream* video, const std::function<UniqueDemuxContext()>& open_again) {
  AVCodecParameters* par = video->codecpar;
  if (par->field_order != AV_FIELD_UNKNOWN || !open_again ||
      !codes_interlaced_frames(par->codec_id))
    return;
  const auto frame = first_frame(open_again, video->index);
  if (!frame) return;
  par->field_order = !frame->interlaced_frame ? AV_FIELD_PROGRESSIVE
                     : frame->top_field_first ? AV_FIELD_TT
                                              : AV_FIELD_BB;
}

}  // namespace vpipe
