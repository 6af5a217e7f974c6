// Frame: one video picture in flight through a pipeline.
//
// It carries its format, the planes (pointers with pitches), its timestamp
// and time base (passed through untouched), where its memory lives, and a
// shared handle that keeps that memory alive (an AVFrame for host frames).
#pragma once

extern "C" {
#include <libavutil/pixfmt.h>
#include <libavutil/rational.h>
}

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "vpipe/kernels/image.hpp"
#include "vpipe/memory/cuda_event.hpp"
#include "vpipe/memory/device_resource.hpp"
#include "vpipe/memory/last_readers.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

enum class MemoryKind { kHost, kDevice };

struct FrameFormat {
  AVPixelFormat pix_fmt = AV_PIX_FMT_NONE;
  int width = 0;
  int height = 0;
  bool operator==(const FrameFormat&) const = default;
};

// "1280x720 yuv420p"
[[nodiscard]] std::string to_string(const FrameFormat& f);

// Per-plane geometry of a planar or semi-planar format (yuv420p, nv12, gray,
// yuv444p…, and the little-endian 9- to 16-bit ones: p010, yuv420p10le…):
// width in pixels, rows, interleaved bytes per pixel (`channels`: 2 for a
// p010 luma plane, 4 for its chroma). Throws for formats vpipe's planes can't
// describe (packed RGB is one plane with 3 or 4 channels and is fine).
struct PlaneShape {
  int width = 0;
  int height = 0;
  int channels = 1;
};
struct PlaneLayout {
  int count = 0;
  std::array<PlaneShape, 4> planes{};
};
[[nodiscard]] PlaneLayout plane_layout(const FrameFormat& f);
[[nodiscard]] bool has_plane_layout(AVPixelFormat pix_fmt);
// Every sample 8 bits: what vpipe's filters take, and what a plugin filter
// should check (has_plane_layout also holds for 16-bit formats; the chain narrows 10-bit
// input with `to_8bit` first).
[[nodiscard]] bool is_8bit(AVPixelFormat pix_fmt);

// How a picture's lines were captured: all at one instant, or as two fields of
// alternate lines (interlaced video: broadcast 1080i and 576i, DV, DVD), the
// top field's instant or the bottom's first. FFmpeg's interlaced_frame and
// top_field_first; filters treat every picture as progressive except the
// deinterlacer, and the encoder codes interlaced pictures as fields where it can.
enum class FieldOrder : std::uint8_t { kProgressive, kTopFirst, kBottomFirst };
[[nodiscard]] FieldOrder field_order_of(const AVFrame& av);
void set_field_order(FieldOrder fields, AVFrame& av);
// "progressive", "interlaced, top field first"…
[[nodiscard]] std::string to_string(FieldOrder fields);
// Whether a picture of `height` rows in `pix_fmt` splits into two fields of whole chroma
// rows (4:2:0: a height of 4n; 4:2:2, 4:4:4: 2n): what coding or converting the fields
// apart needs.
[[nodiscard]] bool splits_into_fields(AVPixelFormat pix_fmt, int height);
// Whether `pix_fmt` holds R, G and B (rgb24, rgba, gbrp…, or a palette of them: pal8), not
// Y'CbCr or grey.
[[nodiscard]] bool is_rgb(AVPixelFormat pix_fmt);
// Whether `pix_fmt` is one of JPEG's full-range Y'CbCr formats (yuvj420p, yuvj422p…).
[[nodiscard]] bool is_jpeg_range(AVPixelFormat pix_fmt);

// Device memory of one frame. Either from a memory strategy, or owned by
// someone else (e.g. a surface of FFmpeg's NVDEC frame pool). Either way it
// is handed back on the stream it came from (the owner's), after that
// stream has been made to wait for the last work that used it (retire_on:
// stages call it before they drop a frame; a frame shared by several
// branches, on each branch's stream). A frame is read on the next stage's
// stream, so without this every free would cross streams, and the strategy's
// next allocate on the producer's stream would have to order itself after the
// reader (a driver call per allocate: slab's cudaStreamWaitEvent, the pool's
// cross-stream reuse); with it, a strategy reuses its own stream's blocks with
// no CUDA call, and the ordering is paid once, here, on the reader's thread.
class DeviceBuffer {
 public:
  DeviceBuffer(DeviceMemoryResource& mr, std::size_t bytes, cudaStream_t stream)
      : mr_(&mr), ptr_(mr.allocate(bytes, stream)), bytes_(bytes), readers_(stream) {}
  DeviceBuffer(std::shared_ptr<void> owner, void* ptr, std::size_t bytes, cudaStream_t owner_stream)
      : owner_(std::move(owner)), ptr_(ptr), bytes_(bytes), readers_(owner_stream) {}
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] std::uint8_t* data() const noexcept { return static_cast<std::uint8_t*>(ptr_); }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  // The work enqueued on `s` so far is a reader's last use (any thread; a frame
  // shared by several branches has a reader per branch: last_readers.hpp).
  void retire_on(cudaStream_t s) noexcept;
  [[nodiscard]] std::size_t readers() const { return readers_.readers(); }

 private:
  DeviceMemoryResource* mr_ = nullptr;
  std::shared_ptr<void> owner_;
  void* ptr_;
  std::size_t bytes_;
  LastReaders<RecordedEvent> readers_;  // the owner's stream, and each reader's last use
};

// The event the producer recorded after writing a device frame; consumers
// make their stream wait on it (vpipe/memory/cuda_event.hpp).
using ReadyEvent = RecordedEvent;

struct Frame {
  FrameFormat format;
  std::array<PlaneView, 4> planes{};
  int num_planes = 0;
  std::int64_t pts = AV_NOPTS_VALUE;
  std::int64_t duration = 0;  // how long it shows, in time_base: its packet's (0: unknown)
  AVRational time_base{0, 1};
  std::int64_t index = 0;        // decode order, from 0
  Clock::time_point origin{};    // when its packet left the demuxer (latency)
  std::shared_ptr<void> ticket;  // --max-in-flight: returned when the last frame holding it goes
  MemoryKind memory = MemoryKind::kHost;
  std::shared_ptr<AVFrame> av;           // host frames: the AVFrame owning the planes
  std::shared_ptr<DeviceBuffer> device;  // device frames: the planes' memory
  std::shared_ptr<ReadyEvent> ready;     // when the planes are written (device frames, and
                                         // host frames a download is still filling)
  // The decoded picture's side data that encoders write back into the stream (closed
  // captions, SMPTE timecode, user SEI, HDR10+, AFD), held in a frame without pixels,
  // so it outlives the decoded frame: copy_props_from puts it on each new host frame,
  // as FFmpeg's filters copy a frame's properties. Null: the picture had none.
  std::shared_ptr<const AVFrame> side_data;
  FieldOrder fields = FieldOrder::kProgressive;  // the decoded picture's, kept by the filters

  // Wraps a decoded host AVFrame (no copy).
  static Frame from_av_frame(UniqueAVFrame frame, AVRational time_base);
  // A decoded AV_PIX_FMT_CUDA frame's (NVDEC's) pixels copied (on `stream`, the
  // decoder's) into a frame from `mr`, and the decoded frame let go at once: it
  // holds one of NVDEC's decode surfaces (32 at most; FFmpeg: "No decoder
  // surfaces left"), and more surfaces slowed many sessions (nvdec.hpp).
  static Frame copy_of_cuda_frame(UniqueAVFrame frame, AVRational time_base,
                                  DeviceMemoryResource& mr, cudaStream_t stream);
  // A decoded AV_PIX_FMT_CUDA frame's planes as they are (no copy), ready once the
  // work on `stream` (the decoder's) so far is done. For a decoder that copies each
  // picture out of NVDEC itself (FFmpeg's cuvid decoders) and so holds no surface:
  // the buffer goes back to its pool after its last reader (DeviceBuffer).
  static Frame of_cuda_frame(UniqueAVFrame frame, AVRational time_base, cudaStream_t stream);
  // A device frame's pixels copied (on `stream`, after its ready event) into a frame from `mr`.
  static Frame copy_on_device(const Frame& src, DeviceMemoryResource& mr, cudaStream_t stream);
  // A new host frame with FFmpeg-aligned planes.
  static Frame allocate_host(const FrameFormat& format);
  // A device frame with 256-byte-aligned plane pitches, in one allocation.
  static Frame allocate_device(const FrameFormat& format, DeviceMemoryResource& mr,
                               cudaStream_t stream);
  // Copies timestamps and bookkeeping (not pixels) from another frame, and its side
  // data and field order onto this frame's AVFrame where it has one (a new host frame,
  // not yet shared).
  void copy_props_from(const Frame& other);
  // Its field order, also on its AVFrame where it has one (a new host frame, not yet shared).
  void set_fields(FieldOrder order);
};

}  // namespace vpipe
