#include "bench_encode.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace vpipe::bench {

namespace {
bool takes(const AVCodec* codec, AVPixelFormat f) {
  if (!codec->pix_fmts) return true;
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == f) return true;
  return false;
}
}  // namespace

double encode_only_fps(TranscodeOptions o, const std::string& encoder, std::int64_t* frames_out) {
  const AVCodec* codec = avcodec_find_encoder_by_name(encoder.c_str());
  if (!codec) throw usage_error(fmt::format("encode-only: no encoder '{}'", encoder));
  if (!takes(codec, AV_PIX_FMT_NV12) && codec->pix_fmts)
    o.filters += fmt::format("{}format={}", o.filters.empty() ? "" : ",",
                             av_get_pix_fmt_name(codec->pix_fmts[0]));
  o.output = "null";
  std::vector<Frame> frames;
  o.on_frame = [&](const Frame& f) {  // the frame is a staging slot: keep a copy
    Frame copy = Frame::allocate_host(f.format);
    av_check(av_frame_copy(copy.av.get(), f.av.get()), "encode-only: copying a frame");
    copy.copy_props_from(f);
    frames.push_back(std::move(copy));
  };
  (void)transcode(o);
  if (frames.empty()) throw std::runtime_error("encode-only: no frames");
  const FrameFormat fmt = frames.front().format;
  auto enc = open_video_encoder(
      codec, fmt, frames.front().time_base.num ? frames.front().time_base : AVRational{1, 90000},
      {30, 1}, false, o, nullptr);
  auto pkt = make_av_packet();
  std::int64_t packets = 0;
  auto drain = [&] {
    while (avcodec_receive_packet(enc.get(), pkt.get()) >= 0) {
      ++packets;
      av_packet_unref(pkt.get());
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& f : frames) {
    if (f.format != fmt) continue;
    f.av->pts = f.pts;
    f.av->pict_type = AV_PICTURE_TYPE_NONE;
    av_check(avcodec_send_frame(enc.get(), f.av.get()), "encode-only");
    drain();
  }
  av_check(avcodec_send_frame(enc.get(), nullptr), "encode-only flush");
  drain();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *frames_out = packets;
  return static_cast<double>(packets) / s;
}

}  // namespace vpipe::bench
