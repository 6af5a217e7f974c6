// HostFramePool as a decoder's get_buffer2: the frames it serves decode to the
// same pixels as FFmpeg's own buffers, it recycles a bounded number of
// buffers, and every buffer is freed once the frames and the pool are gone.
// (The pageable kind runs here; the pinned kind runs in the GPU tests' transcodes.)
#include <gtest/gtest.h>

#include <vector>

#include "../e2e/media_check.hpp"
#include "vpipe/pipeline/graph/host_frames.hpp"

using namespace vpipe;
using namespace vpipe::test;

namespace {

std::vector<Frame> decode_all(HostFramePool* pool, int threads) {
  std::vector<Frame> frames;
  for_each_frame(
      kSample, [&](const Frame& f) { frames.push_back(f); },
      [&](AVCodecContext* dec) {
        dec->thread_count = threads;
        if (pool) pool->attach(dec);
      });
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
  const int n = for_each_frame(
      kSample, [](const Frame&) {},
      [&](AVCodecContext* dec) {
        dec->thread_count = 2;
        pool.attach(dec);
      });
  EXPECT_EQ(n, 150);
  EXPECT_LT(pool.buffers(), 40) << "buffers are recycled, not one per frame";
}