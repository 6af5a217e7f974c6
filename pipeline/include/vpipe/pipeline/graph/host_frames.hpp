// Decoded frames straight into pinned host memory.
//
// HostFramePool is a decoder's get_buffer2: libavcodec writes each picture
// into a buffer from a pool of cudaHostAlloc memory (or plain memory, kind
// kPageable, for comparison and CPU tests), so the upload stage can copy it
// to the device directly, with no memcpy into a staging slot. Buffers are
// recycled through an AVBufferPool (thread-safe: frame threads call it), one
// pool per frame size, a new one when the size changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

class HostFramePool {
 public:
  explicit HostFramePool(HostMemory kind) : kind_(kind) {}
  ~HostFramePool();
  HostFramePool(const HostFramePool&) = delete;
  HostFramePool& operator=(const HostFramePool&) = delete;

  // Makes `decoder` (not yet opened) allocate its frames here when it can
  // (AV_CODEC_CAP_DR1 and an 8-bit planar format); otherwise FFmpeg's default.
  // The pool must outlive every frame the decoder gives out.
  void attach(AVCodecContext* decoder);

  [[nodiscard]] std::int64_t buffers() const noexcept { return buffers_.load(); }
  [[nodiscard]] std::int64_t bytes() const noexcept { return bytes_.load(); }
  [[nodiscard]] std::int64_t frames() const noexcept { return frames_.load(); }  // served here

 private:
  static int get_buffer2(AVCodecContext* ctx, AVFrame* frame, int flags);
  static AVBufferRef* alloc(void* opaque, std::size_t size);
  static void free_buffer(void* opaque, std::uint8_t* data);

  HostMemory kind_;
  std::mutex mu_;
  AVBufferPool* pool_ = nullptr;
  std::size_t pool_size_ = 0;
  std::atomic<std::int64_t> buffers_{0}, bytes_{0}, frames_{0};
};

// True if `p` is page-locked host memory the CUDA driver knows (cudaHostAlloc
// or registered): a copy from it needs no staging.
[[nodiscard]] bool is_pinned_host(const void* p) noexcept;

}  // namespace vpipe
