// RAII for FFmpeg handles (torchcodec's FFMPEGCommon.h way): a deleter over
// each free function, distinct types for demux and mux contexts since they are
// freed differently, and ffmpeg_error carrying the AVERROR code.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vpipe {

class ffmpeg_error : public std::runtime_error {
 public:
  ffmpeg_error(int averror, const std::string& what) : std::runtime_error(what), averror_(averror) {}
  [[nodiscard]] int averror() const noexcept { return averror_; }

 private:
  int averror_;
};

// "Invalid data found when processing input" for AVERROR_INVALIDDATA.
[[nodiscard]] std::string av_error_text(int averror);

// Throws ffmpeg_error("<what>: <av_error_text>") when ret < 0; returns ret.
int av_check(int ret, std::string_view what);

namespace detail {
struct FrameDeleter {
  void operator()(AVFrame* f) const noexcept { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const noexcept { av_packet_free(&p); }
};
struct CodecContextDeleter {
  void operator()(AVCodecContext* c) const noexcept { avcodec_free_context(&c); }
};
struct DemuxContextDeleter {
  void operator()(AVFormatContext* c) const noexcept { avformat_close_input(&c); }
};
struct MuxContextDeleter {
  void operator()(AVFormatContext* c) const noexcept {
    if (c && !(c->oformat->flags & AVFMT_NOFILE)) avio_closep(&c->pb);
    avformat_free_context(c);
  }
};
struct SwsDeleter {
  void operator()(SwsContext* c) const noexcept { sws_freeContext(c); }
};
struct CodecParametersDeleter {
  void operator()(AVCodecParameters* p) const noexcept { avcodec_parameters_free(&p); }
};
struct BufferRefDeleter {
  void operator()(AVBufferRef* b) const noexcept { av_buffer_unref(&b); }
};
}  // namespace detail

using UniqueAVFrame = std::unique_ptr<AVFrame, detail::FrameDeleter>;
using UniqueAVPacket = std::unique_ptr<AVPacket, detail::PacketDeleter>;
using UniqueAVCodecContext = std::unique_ptr<AVCodecContext, detail::CodecContextDeleter>;
using UniqueDemuxContext = std::unique_ptr<AVFormatContext, detail::DemuxContextDeleter>;
using UniqueMuxContext = std::unique_ptr<AVFormatContext, detail::MuxContextDeleter>;
using UniqueSwsContext = std::unique_ptr<SwsContext, detail::SwsDeleter>;
using UniqueAVCodecParameters = std::unique_ptr<AVCodecParameters, detail::CodecParametersDeleter>;
using UniqueAVBufferRef = std::unique_ptr<AVBufferRef, detail::BufferRefDeleter>;

[[nodiscard]] UniqueAVFrame make_av_frame();
[[nodiscard]] UniqueAVPacket make_av_packet();

// Opens `path` for reading and finds its stream info. Errors name the file.
[[nodiscard]] UniqueDemuxContext open_input(const std::string& path);

}  // namespace vpipe
