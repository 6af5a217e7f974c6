#include "vpipe/pipeline/io/first_frame.hpp"

#include <exception>
#include <utility>

#include "vpipe/pipeline/io/reencode.hpp"

namespace vpipe {

FirstFrame::FirstFrame(AVFormatContext* input, int index,
                       std::function<UniqueDemuxContext()> open_again)
    : input_(input), index_(index), open_again_(std::move(open_again)) {}

const AVFrame* FirstFrame::get() {
  if (tried_) return frame_.get();
  tried_ = true;
  UniqueDemuxContext again = open_again_ ? open_again_() : nullptr;
  AVFormatContext* in = again ? again.get() : input_;
  UniqueAVCodecContext dec;
  try {
    dec = open_stream_decoder(in->streams[index_], "video");
  } catch (const std::exception&) {
    return nullptr;  // nothing to learn here: the session's own decoder will say why
  }
  auto frame = make_av_frame();
  for (int n = 0; n < 500; ++n) {
    auto pkt = make_av_packet();
    if (av_read_frame(in, pkt.get()) < 0) break;
    const bool ours = pkt->stream_index == index_ && avcodec_send_packet(dec.get(), pkt.get()) >= 0;
    if (!again) read_.push_back(std::move(pkt));
    if (ours && avcodec_receive_frame(dec.get(), frame.get()) >= 0) {
      frame_ = std::move(frame);
      break;
    }
  }
  return frame_.get();
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

void settle_field_order(AVStream* video, FirstFrame& first) {
  AVCodecParameters* par = video->codecpar;
  if (par->field_order != AV_FIELD_UNKNOWN || !codes_interlaced_frames(par->codec_id)) return;
  const AVFrame* frame = first.get();
  if (!frame) return;
  par->field_order = !frame->interlaced_frame ? AV_FIELD_PROGRESSIVE
                     : frame->top_field_first ? AV_FIELD_TT
                                              : AV_FIELD_BB;
}

}  // namespace vpipe
