#include "vpipe/pipeline/graph/host_frames.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include <cuda_runtime_api.h>

extern "C" {
#include <libavutil/imgutils.h>
}

#include "vpipe/pipeline/graph/frame.hpp"

namespace vpipe {

namespace {
constexpr std::size_t kAlign = 64;  // FFmpeg's widest SIMD (AVX-512) stride alignment
std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
struct BufferInfo {
  HostFramePool* pool;
  std::size_t size;
  bool pinned;
};
}  // namespace

HostFramePool::~HostFramePool() {
  std::lock_guard lock(mu_);
  av_buffer_pool_uninit(&pool_);  // buffers still out are freed when they come back
}

void HostFramePool::attach(AVCodecContext* decoder) {
  decoder->opaque = this;
  decoder->get_buffer2 = &HostFramePool::get_buffer2;
#if FF_API_THREAD_SAFE_CALLBACKS
  // FFmpeg < 6 asks custom get_buffer2 callbacks to say they are thread-safe
  // (this one is: the pool and its switch are under a mutex, av_buffer_pool_get
  // is thread-safe); without it, frame threading warns on every open.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  decoder->thread_safe_callbacks = 1;
#pragma GCC diagnostic pop
#endif
}

AVBufferRef* HostFramePool::alloc(void* opaque, std::size_t size) {
  auto* self = static_cast<HostFramePool*>(opaque);
  void* p = nullptr;
  bool pinned = false;
  if (self->kind_ != HostMemory::kPageable) {
    if (cudaHostAlloc(&p, size, cudaHostAllocDefault) == cudaSuccess) {
      pinned = true;
    } else {
      cudaGetLastError();
      p = nullptr;
      spdlog::warn("decoded frames: cudaHostAlloc({} bytes) failed; using pageable memory", size);
    }
  }
  if (!p) p = std::aligned_alloc(kAlign, align_up(size));
  if (!p) return nullptr;
  auto* info = new BufferInfo{self, size, pinned};
  AVBufferRef* ref = av_buffer_create(static_cast<std::uint8_t*>(p), size, &free_buffer, info, 0);
  if (!ref) {
    free_buffer(info, static_cast<std::uint8_t*>(p));
    return nullptr;
  }
  self->buffers_++;
  self->bytes_ += static_cast<std::int64_t>(size);
  return ref;
}

void HostFramePool::free_buffer(void* opaque, std::uint8_t* data) {
  auto* info = static_cast<BufferInfo*>(opaque);
  if (info->pinned)
    cudaFreeHost(data);
  else
    std::free(data);
  info->pool->buffers_--;
  info->pool->bytes_ -= static_cast<std::int64_t>(info->size);
  delete info;
}

int HostFramePool::get_buffer2(AVCodecContext* ctx, AVFrame* frame, int flags) {
  auto* self = static_cast<HostFramePool*>(ctx->opaque);
  const auto fmt = static_cast<AVPixelFormat>(frame->format);
  if (!(ctx->codec->capabilities & AV_CODEC_CAP_DR1) || !is_8bit(fmt))
    return avcodec_default_get_buffer2(ctx, frame, flags);
  // The decoder may write past the visible picture: align as it asks.
  int w = frame->width, h = frame->height;
  int linesize_align[AV_NUM_DATA_POINTERS];
  avcodec_align_dimensions2(ctx, &w, &h, linesize_align);
  int linesize[4] = {};
  if (av_image_fill_linesizes(linesize, fmt, w) < 0)
    return avcodec_default_get_buffer2(ctx, frame, flags);
  ptrdiff_t pitches[4] = {};
  for (int i = 0; i < 4; ++i) {
    linesize[i] = static_cast<int>(align_up(static_cast<std::size_t>(linesize[i])));
    pitches[i] = linesize[i];
  }
  std::size_t sizes[4] = {};
  if (av_image_fill_plane_sizes(sizes, fmt, h, pitches) < 0)
    return avcodec_default_get_buffer2(ctx, frame, flags);
  std::size_t total = kAlign;  // room to align the base
  for (std::size_t s : sizes) total += align_up(s);

  AVBufferRef* buf = nullptr;
  {
    std::lock_guard lock(self->mu_);
    if (!self->pool_ || self->pool_size_ != total) {
      av_buffer_pool_uninit(&self->pool_);  // a new size: old buffers free as they return
      self->pool_ = av_buffer_pool_init2(total, self, &HostFramePool::alloc, nullptr);
      self->pool_size_ = total;
    }
    if (self->pool_) buf = av_buffer_pool_get(self->pool_);
  }
  if (!buf) return AVERROR(ENOMEM);
  auto* base =
      reinterpret_cast<std::uint8_t*>(align_up(reinterpret_cast<std::uintptr_t>(buf->data)));
  for (int i = 0; i < 4; ++i) {
    frame->data[i] = sizes[i] ? base : nullptr;
    frame->linesize[i] = sizes[i] ? linesize[i] : 0;
    base += align_up(sizes[i]);
  }
  frame->buf[0] = buf;
  frame->extended_data = frame->data;
  self->frames_++;
  return 0;
}

bool is_pinned_host(const void* p) noexcept {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

}  // namespace vpipe
