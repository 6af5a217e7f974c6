#include "vpipe/pipeline/io/hw_probe.hpp"

#include <fmt/format.h>

#include <vector>

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/opt.h>
}

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

namespace {

constexpr int kSize = 256;

// A few frames of moving gradient, encoded with libx264 into packets.
std::vector<UniqueAVPacket> encode_probe_stream(AVCodecParameters* par) {
  const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
  if (!codec) throw ffmpeg_error(AVERROR_ENCODER_NOT_FOUND, "libx264 is not available");
  UniqueAVCodecContext enc(avcodec_alloc_context3(codec));
  enc->width = kSize;
  enc->height = kSize;
  enc->pix_fmt = AV_PIX_FMT_YUV420P;
  enc->time_base = {1, 30};
  AVDictionary* opts = nullptr;
  av_dict_set(&opts, "preset", "ultrafast", 0);
  const int ret = avcodec_open2(enc.get(), codec, &opts);
  av_dict_free(&opts);
  av_check(ret, "opening libx264 for the probe");
  std::vector<UniqueAVPacket> packets;
  auto drain = [&] {
    while (true) {
      UniqueAVPacket p = make_av_packet();
      if (avcodec_receive_packet(enc.get(), p.get()) < 0) return;
      packets.push_back(std::move(p));
    }
  };
  for (int i = 0; i < 8; ++i) {
    UniqueAVFrame f = make_av_frame();
    f->format = enc->pix_fmt;
    f->width = kSize;
    f->height = kSize;
    av_check(av_frame_get_buffer(f.get(), 0), "probe frame");
    for (int p = 0; p < 3; ++p) {
      const int h = p ? kSize / 2 : kSize, w = p ? kSize / 2 : kSize;
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          f->data[p][y * f->linesize[p] + x] = static_cast<uint8_t>(x + y + 8 * i);
    }
    f->pts = i;
    av_check(avcodec_send_frame(enc.get(), f.get()), "probe encode");
    drain();
  }
  avcodec_send_frame(enc.get(), nullptr);
  drain();
  avcodec_parameters_from_context(par, enc.get());
  return packets;
}

AVPixelFormat pick_cuda(AVCodecContext*, const AVPixelFormat* fmts) {
  for (const AVPixelFormat* p = fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == AV_PIX_FMT_CUDA) return *p;
  return AV_PIX_FMT_NONE;  // fail rather than fall back to software silently
}

}  // namespace

HwCodecProbe probe_hw_codecs() {
  HwCodecProbe r;
  AVBufferRef* raw = nullptr;
  if (const int ret = av_hwdevice_ctx_create(&raw, AV_HWDEVICE_TYPE_CUDA, nullptr, nullptr, 0);
      ret < 0) {
    r.cuda_detail = fmt::format("FFmpeg cannot create a CUDA device: {}", av_error_text(ret));
    r.nvdec_detail = "needs a CUDA device";
  } else {
    r.cuda_hwdevice = true;
    r.cuda_detail = "FFmpeg created a CUDA hw device";
  }
  UniqueAVBufferRef device(raw);

  if (device) {
    try {
      UniqueAVCodecParameters par(avcodec_parameters_alloc());
      auto packets = encode_probe_stream(par.get());
      const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_H264);
      UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
      av_check(avcodec_parameters_to_context(dec.get(), par.get()), "probe decoder parameters");
      dec->hw_device_ctx = av_buffer_ref(device.get());
      dec->get_format = pick_cuda;
      av_check(avcodec_open2(dec.get(), codec, nullptr), "opening the h264 decoder");
      int cuda_frames = 0, other_frames = 0;
      UniqueAVFrame f = make_av_frame();
      auto receive = [&] {
        while (avcodec_receive_frame(dec.get(), f.get()) >= 0) {
          (f->format == AV_PIX_FMT_CUDA ? cuda_frames : other_frames)++;
          av_frame_unref(f.get());
        }
      };
      for (auto& p : packets) {
        const int ret = avcodec_send_packet(dec.get(), p.get());
        if (ret < 0) throw ffmpeg_error(ret, fmt::format("NVDEC decode: {}", av_error_text(ret)));
        receive();
      }
      avcodec_send_packet(dec.get(), nullptr);
      receive();
      r.nvdec = cuda_frames > 0 && other_frames == 0;
      r.nvdec_detail = fmt::format("decoded {} of {} H.264 probe frames as CUDA frames",
                                   cuda_frames, packets.size());
    } catch (const std::exception& e) {
      r.nvdec_detail = e.what();
    }
  }

  const NvencProbe nvenc = probe_nvenc();
  r.nvenc = nvenc.usable;
  r.nvenc_detail = nvenc.detail;
  return r;
}

NvencProbe probe_nvenc() {
  const AVCodec* nvenc = avcodec_find_encoder_by_name("h264_nvenc");
  if (!nvenc) return {false, "this FFmpeg build has no h264_nvenc"};
  UniqueAVCodecContext enc(avcodec_alloc_context3(nvenc));
  enc->width = kSize;
  enc->height = kSize;
  enc->pix_fmt = AV_PIX_FMT_YUV420P;
  enc->time_base = {1, 30};
  const int ret = avcodec_open2(enc.get(), nvenc, nullptr);
  if (ret < 0) return {false, fmt::format("h264_nvenc cannot open: {}", av_error_text(ret))};
  return {true, "h264_nvenc opened"};
}

}  // namespace vpipe
