// NVDEC decode through FFmpeg's `cuda` hwaccel, frames kept on the device.
//
// FFmpeg's NVDEC decoder hands out each decoded picture in a frame of an
// AVHWFramesContext pool. vpipe gives that pool its own allocator, backed by
// the selected memory strategy, and FFmpeg's CUDA device uses the runtime's
// primary context and a stream vpipe owns, so decoded frames are ordinary
// device frames for the CUDA filter stages: no download and re-upload.
// NVDEC has at most 32 decode surfaces, and FFmpeg's decoded frame holds one
// until it is freed; see attach(). vpipe copies each frame out at once on the
// decoder's stream (Frame::copy_of_cuda_frame), so the pipeline never holds a
// surface and the decoder needs only kNvdecFramesHeldCopying more than its
// DPB + 2 (attach()): more surfaces slowed many sessions (21 HEVC sessions on the H200:
// docs/results/decode-surfaces-h200-2026-12-04-31aa6d6-dirty).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <cuda_runtime_api.h>

#include "vpipe/memory/device_resource.hpp"
#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

// The frames a caller that copies each decoded frame out as it comes holds at
// once: the one being copied (decode, segment decode, the raw probe's FFmpeg path).
inline constexpr int kNvdecFramesHeldCopying = 1;

class NvdecContext {
 public:
  // Creates FFmpeg's CUDA device on the current CUDA device's primary context,
  // with `stream` (owned by the caller, must outlive this) as its stream.
  // Throws ffmpeg_error when FFmpeg cannot (no driver, no nvcuvid).
  NvdecContext(DeviceMemoryResource& mr, cudaStream_t stream);
  ~NvdecContext();
  NvdecContext(const NvdecContext&) = delete;
  NvdecContext& operator=(const NvdecContext&) = delete;

  // Makes `decoder` (not yet opened) decode through NVDEC into this pool.
  // A decoded frame keeps its NVDEC decode surface until it is freed, so the
  // decoder gets `frames_held` surfaces more than its DPB + 2 (at most 32 in
  // all, NVDEC's limit): the frames its caller holds at once (FFmpeg adds one
  // for each frame thread itself). Its thread count is the caller's (decoder_threads()).
  void attach(AVCodecContext* decoder, int frames_held);
  // Makes `decoder`, one of FFmpeg's cuvid decoders (cuvid_decoder()), not yet
  // opened, decode on this device into this pool. It copies each picture out of
  // NVDEC's surface itself (its decode surfaces are its own: decode_surfaces()
  // stays 0), on a stream of this context's own from then on (stream(); see
  // nvdec.cpp). Call it at most once, before anything takes stream().
  void attach_cuvid(AVCodecContext* decoder);

  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  // The decoder copies each picture out of NVDEC's surface itself (attach_cuvid):
  // its frames hold no surface and can go downstream as they are (Frame::of_cuda_frame).
  [[nodiscard]] bool frames_hold_no_surface() const noexcept { return cuvid_; }
  // The way FFmpeg drives NVDEC here: "cuvid" (attach_cuvid) or "hwaccel" (attach).
  [[nodiscard]] std::string_view api() const noexcept { return cuvid_ ? "cuvid" : "hwaccel"; }
  [[nodiscard]] DeviceMemoryResource& memory() const noexcept { return mr_; }
  [[nodiscard]] std::int64_t pool_buffers() const noexcept { return buffers_.load(); }
  [[nodiscard]] std::int64_t pool_bytes() const noexcept { return bytes_.load(); }
  [[nodiscard]] int decode_surfaces() const noexcept { return surfaces_.load(); }
  // Why get_format refused (empty when it did not).
  [[nodiscard]] std::string refusal() const;

 private:
  struct StreamDestroy {
    void operator()(cudaStream_t s) const noexcept;
  };
  struct Impl;
  // Declared first, destroyed last: the device and frames in impl_ use it.
  std::unique_ptr<CUstream_st, StreamDestroy> own_stream_;  // attach_cuvid's
  std::unique_ptr<Impl> impl_;
  DeviceMemoryResource& mr_;
  cudaStream_t stream_;
  std::atomic<std::int64_t> buffers_{0}, bytes_{0};
  std::atomic<int> surfaces_{0};
  int frames_held_ = 0;
  bool cuvid_ = false;
  friend struct NvdecCallbacks;
};

// Empty if FFmpeg can decode this stream with NVDEC into 8-bit NV12 frames
// (the formats vpipe's CUDA filters take); otherwise why not.
[[nodiscard]] std::string nvdec_unsupported_reason(const AVCodecParameters* par);
// FFmpeg's cuvid decoder for a codec (h264_cuvid, hevc_cuvid…: NVIDIA's parser
// and NVDEC through the driver); null where FFmpeg has none.
[[nodiscard]] const AVCodec* cuvid_decoder(AVCodecID codec);
// The smallest picture NVDEC decodes for a codec (width, height).
[[nodiscard]] std::pair<int, int> nvdec_min_size(AVCodecID codec);

}  // namespace vpipe
