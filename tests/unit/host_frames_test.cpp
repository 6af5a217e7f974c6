// HostFramePool as a decoder's get_buffer2: the frames it serves decode to the
// same pixels as FFmpeg's own buffers, it recycles a bounded number of
// buffers, and every buffer is freed once the frames and the pool are gone.
// (The pageable kind runs here; the pinned kind runs in the GPU tests' transcodes.)
#include <gtest/gtest.h>

#include <vector>

#include "../e2e/media_check.hpp"
#include "vpipe/pipeline/host_frames.hpp"

using namespace vpipe;
using namespace vpipe::test;

namespace {

std::vector<Frame> decode_all(HostFramePool* pool, int threads) {
  auto in = open_input(kSample);
  const int v = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  const AVCodec* codec = avcodec_find_decoder(in->streams[v]->codecpar->codec_id);
  UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
  avcodec_parameters_to_context(dec.get(), in->streams[v]->codecpar);
  dec->thread_count = threads;
  if (pool) pool->attach(dec.get());
  av_check(avcodec_open2(dec.get(), codec, nullptr), "open decoder");
  std::vector<Frame> frames;
  auto drain = [&] {
    while (true) {
      auto f = make_av_frame();
      if (avcodec_receive_frame(dec.get(), f.get()) < 0) return;
      frames.push_back(Frame::from_av_frame(std::move(f), in->streams[v]->time_base));
    }
  };
  auto pkt = make_av_packet();
  while (av_read_frame(in.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == v) {
      avcodec_send_packet(dec.get(), pkt.get());
      drain();
    }
    av_packet_unref(pkt.get());
  }
  avcodec_send_packet(dec.get(), nullptr);
  drain();
  return frames;
}

}  // namespace

TEST(HostFramePool, DecodesTheSamePixelsWithFrameThreads) {
  const auto reference = decode_all(nullptr, 1);
  ASSERT_EQ(reference.size(), 150u);
  HostFramePool pool(HostMemory::kPageable);
  {
    const auto frames = decode_all(&pool, 4);
    ASSERT_EQ(frames.size(), reference.size());
    EXPECT_EQ(pool.frames(), 150) << "every picture was allocated by the pool";
    for (std::size_t i = 0; i < frames.size(); ++i) {
      ASSERT_EQ(frames[i].pts, reference[i].pts);
      ASSERT_TRUE(std::isinf(frame_psnr(frames[i], reference[i]))) << "frame " << i << " differs";
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(frames[i].planes[0].data) % 64, 0u);
    }
    EXPECT_EQ(pool.buffers(), 150) << "all 150 frames are still held here";
  }
  EXPECT_EQ(pool.buffers(), 150) << "released frames go back to the pool, not to the system";
}

TEST(HostFramePool, RecyclesBuffersWhenFramesAreReleased) {
  HostFramePool pool(HostMemory::kPageable);
  // Decode, dropping each frame at once: a handful of buffers serve them all.
  auto in = open_input(kSample);
  const int v = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  const AVCodec* codec = avcodec_find_decoder(in->streams[v]->codecpar->codec_id);
  UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
  avcodec_parameters_to_context(dec.get(), in->streams[v]->codecpar);
  dec->thread_count = 2;
  pool.attach(dec.get());
  av_check(avcodec_open2(dec.get(), codec, nullptr), "open decoder");
  int n = 0;
  auto f = make_av_frame();
  auto pkt = make_av_packet();
  while (av_read_frame(in.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == v) {
      avcodec_send_packet(dec.get(), pkt.get());
      while (avcodec_receive_frame(dec.get(), f.get()) >= 0) {
        ++n;
        av_frame_unref(f.get());
      }
    }
    av_packet_unref(pkt.get());
  }
  EXPECT_GT(n, 100);
  EXPECT_LT(pool.buffers(), 40) << "buffers are recycled, not one per frame";
  dec.reset();
}
