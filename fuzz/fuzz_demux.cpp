// Fuzzes demux + decode on short inputs: FFmpeg reads the bytes from memory
// (custom AVIO), vpipe's frame wrapping takes every decoded picture. Bounded:
// 64 packets, 1 decoder thread, a small probe.
#include <algorithm>
#include <cstdint>
#include <cstring>

extern "C" {
#include <libavformat/avio.h>
}

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/frame.hpp"

namespace {
struct Memory {
  const std::uint8_t* data;
  std::size_t size, pos;
};
int read(void* opaque, std::uint8_t* buf, int n) {
  auto* m = static_cast<Memory*>(opaque);
  const std::size_t left = m->size - m->pos;
  if (left == 0) return AVERROR_EOF;
  const std::size_t k = std::min<std::size_t>(left, static_cast<std::size_t>(n));
  std::memcpy(buf, m->data + m->pos, k);
  m->pos += k;
  return static_cast<int>(k);
}
std::int64_t seek(void* opaque, std::int64_t offset, int whence) {
  auto* m = static_cast<Memory*>(opaque);
  if (whence & AVSEEK_SIZE) return static_cast<std::int64_t>(m->size);
  std::int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = static_cast<std::int64_t>(m->pos);
      break;
    case SEEK_END:
      base = static_cast<std::int64_t>(m->size);
      break;
    default:
      return -1;
  }
  const std::int64_t to = base + offset;
  if (to < 0 || to > static_cast<std::int64_t>(m->size)) return -1;
  m->pos = static_cast<std::size_t>(to);
  return to;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  av_log_set_level(AV_LOG_QUIET);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Memory mem{data, size, 0};
  auto* buffer = static_cast<std::uint8_t*>(av_malloc(4096));
  AVIOContext* io = avio_alloc_context(buffer, 4096, 0, &mem, &read, nullptr, &seek);
  AVFormatContext* fmt = avformat_alloc_context();
  fmt->pb = io;
  fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
  fmt->probesize = 32 * 1024;
  fmt->max_analyze_duration = 500000;
  if (avformat_open_input(&fmt, nullptr, nullptr, nullptr) == 0) {
    vpipe::UniqueDemuxContext ctx(fmt);
    if (avformat_find_stream_info(ctx.get(), nullptr) >= 0) {
      const int v = av_find_best_stream(ctx.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
      const AVCodec* codec =
          v >= 0 ? avcodec_find_decoder(ctx->streams[v]->codecpar->codec_id) : nullptr;
      if (codec) {
        vpipe::UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
        avcodec_parameters_to_context(dec.get(), ctx->streams[v]->codecpar);
        dec->thread_count = 1;
        if (avcodec_open2(dec.get(), codec, nullptr) == 0) {
          auto pkt = vpipe::make_av_packet();
          auto drain = [&] {
            while (true) {
              auto f = vpipe::make_av_frame();
              if (avcodec_receive_frame(dec.get(), f.get()) < 0) return;
              const auto frame =
                  vpipe::Frame::from_av_frame(std::move(f), ctx->streams[v]->time_base);
              (void)frame;
            }
          };
          for (int n = 0; n < 64 && av_read_frame(ctx.get(), pkt.get()) >= 0; ++n) {
            if (pkt->stream_index == v) {
              avcodec_send_packet(dec.get(), pkt.get());
              drain();
            }
            av_packet_unref(pkt.get());
          }
          avcodec_send_packet(dec.get(), nullptr);
          drain();
        }
      }
    }
  }
  // avformat_close_input does not free a custom AVIO context.
  av_freep(&io->buffer);
  avio_context_free(&io);
  return 0;
}
