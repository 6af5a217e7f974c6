#include "vpipe/pipeline/av.hpp"

#include <fmt/format.h>

namespace vpipe {

std::string av_error_text(int averror) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(averror, buf, sizeof buf);
  return buf;
}

int av_check(int ret, std::string_view what) {
  if (ret < 0) throw ffmpeg_error(ret, fmt::format("{}: {}", what, av_error_text(ret)));
  return ret;
}

UniqueAVFrame make_av_frame() {
  UniqueAVFrame f(av_frame_alloc());
  if (!f) throw ffmpeg_error(AVERROR(ENOMEM), "av_frame_alloc: out of memory");
  return f;
}

UniqueAVPacket make_av_packet() {
  UniqueAVPacket p(av_packet_alloc());
  if (!p) throw ffmpeg_error(AVERROR(ENOMEM), "av_packet_alloc: out of memory");
  return p;
}

UniqueDemuxContext open_input(const std::string& path) {
  AVFormatContext* raw = nullptr;
  av_check(avformat_open_input(&raw, path.c_str(), nullptr, nullptr),
           fmt::format("cannot open input '{}'", path));
  UniqueDemuxContext ctx(raw);
  av_check(avformat_find_stream_info(ctx.get(), nullptr),
           fmt::format("cannot read stream info of '{}'", path));
  return ctx;
}

}  // namespace vpipe
