#include "vpipe/pipeline/graph/frame.hpp"

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <string_view>
#include <vector>

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/cuda_ops.hpp"

namespace vpipe {

std::string to_string(const FrameFormat& f) {
  const char* name = av_get_pix_fmt_name(f.pix_fmt);
  return fmt::format("{}x{} {}", f.width, f.height, name ? name : "none");
}

bool has_plane_layout(AVPixelFormat pix_fmt) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pix_fmt);
  if (!d || (d->flags & (AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BITSTREAM | AV_PIX_FMT_FLAG_PAL |
                         AV_PIX_FMT_FLAG_BE)))
    return false;
  const int bytes = d->comp[0].depth > 8 ? 2 : 1;
  for (int c = 0; c < d->nb_components; ++c) {
    const AVComponentDescriptor& comp = d->comp[c];
    if (bytes == 1 && (comp.depth != 8 || comp.shift != 0)) return false;
    // 9-16 bits in a little-endian 16-bit word (high bits for p010, low for yuv420p10le)
    if (bytes == 2 && (comp.depth <= 8 || comp.depth + comp.shift > 16 || comp.step % 2 != 0))
      return false;
  }
  return !(d->flags & AV_PIX_FMT_FLAG_RGB) || bytes == 1;  // (no 16-bit RGB)
}

bool is_8bit(AVPixelFormat pix_fmt) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pix_fmt);
  return has_plane_layout(pix_fmt) && d->comp[0].depth == 8;
}

PlaneLayout plane_layout(const FrameFormat& f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f.pix_fmt);
  VPIPE_EXPECTS(has_plane_layout(f.pix_fmt),
                fmt::format("pixel format {} has no plane layout", d ? d->name : "none"));
  PlaneLayout layout;
  for (int c = 0; c < d->nb_components; ++c) {
    const AVComponentDescriptor& comp = d->comp[c];
    PlaneShape& shape = layout.planes[static_cast<std::size_t>(comp.plane)];
    const bool chroma = (c == 1 || c == 2) && !(d->flags & AV_PIX_FMT_FLAG_RGB);
    shape.width = chroma ? AV_CEIL_RSHIFT(f.width, d->log2_chroma_w) : f.width;
    shape.height = chroma ? AV_CEIL_RSHIFT(f.height, d->log2_chroma_h) : f.height;
    shape.channels = comp.step;  // bytes per pixel in that plane
    if (comp.plane + 1 > layout.count) layout.count = comp.plane + 1;
  }
  return layout;
}

namespace {
// f.planes from an AVFrame's data and linesize, shaped by f.format.
void set_planes(Frame& f, const AVFrame& av) {
  const PlaneLayout layout = plane_layout(f.format);
  f.num_planes = layout.count;
  for (int p = 0; p < layout.count; ++p) {
    const auto& s = layout.planes[static_cast<std::size_t>(p)];
    f.planes[static_cast<std::size_t>(p)] = {av.data[p], s.width, s.height, s.channels,
                                             static_cast<std::size_t>(av.linesize[p])};
  }
}
}  // namespace

namespace {

// What of a decoded picture's side data an encoder may write into its stream again:
// nothing that depends on the picture's size (regions of interest, pan-scan, motion).
constexpr AVFrameSideDataType kCarried[] = {AV_FRAME_DATA_A53_CC, AV_FRAME_DATA_S12M_TIMECODE,
                                            AV_FRAME_DATA_SEI_UNREGISTERED,
                                            AV_FRAME_DATA_DYNAMIC_HDR_PLUS, AV_FRAME_DATA_AFD};

bool carried(AVFrameSideDataType type) {
  return std::find(std::begin(kCarried), std::end(kCarried), type) != std::end(kCarried);
}

// `from`'s carried side data onto `to` (references, no copy), each type `to` lacks.
void add_side_data(const AVFrame& from, AVFrame* to) {
  std::vector<AVFrameSideDataType> had;
  for (int i = 0; i < to->nb_side_data; ++i) had.push_back(to->side_data[i]->type);
  for (int i = 0; i < from.nb_side_data; ++i) {
    const AVFrameSideData* sd = from.side_data[i];
    if (!carried(sd->type) || std::find(had.begin(), had.end(), sd->type) != had.end()) continue;
    AVBufferRef* ref = av_buffer_ref(sd->buf);
    if (!ref) throw std::bad_alloc();
    AVFrameSideData* copy = av_frame_new_side_data_from_buf(to, sd->type, ref);
    if (!copy) {
      av_buffer_unref(&ref);
      throw std::bad_alloc();
    }
    av_dict_copy(&copy->metadata, sd->metadata, 0);
  }
}

// The carried side data of a decoded picture, in a frame of its own (null: none).
std::shared_ptr<const AVFrame> carried_side_data(const AVFrame& av) {
  bool any = false;
  for (int i = 0; i < av.nb_side_data && !any; ++i) any = carried(av.side_data[i]->type);
  if (!any) return nullptr;
  std::shared_ptr<AVFrame> kept(av_frame_alloc(), detail::FrameDeleter{});
  if (!kept) throw std::bad_alloc();
  add_side_data(av, kept.get());
  return kept;
}

// How long a decoded picture shows, in its time base: its packet's duration (0: unknown).
std::int64_t duration_of(const AVFrame& av) {
#if LIBAVUTIL_VERSION_MAJOR >= 58
  return av.duration > 0 ? av.duration : 0;
#else
  return av.pkt_duration > 0 ? av.pkt_duration : 0;
#endif
}

}  // namespace

Frame Frame::from_av_frame(UniqueAVFrame av, AVRational tb) {
  Frame f;
  f.format = {static_cast<AVPixelFormat>(av->format), av->width, av->height};
  f.pts = av->best_effort_timestamp != AV_NOPTS_VALUE ? av->best_effort_timestamp : av->pts;
  f.duration = duration_of(*av);
  f.time_base = tb;
  f.memory = MemoryKind::kHost;
  if (has_plane_layout(f.format.pix_fmt)) set_planes(f, *av);
  f.side_data = carried_side_data(*av);
  f.fields = field_order_of(*av);
  f.av = std::shared_ptr<AVFrame>(av.release(), detail::FrameDeleter{});
  return f;
}

Frame Frame::allocate_host(const FrameFormat& format) {
  UniqueAVFrame av = make_av_frame();
  av->format = format.pix_fmt;
  av->width = format.width;
  av->height = format.height;
  av_check(av_frame_get_buffer(av.get(), 0), "allocating a host frame");
  Frame f = from_av_frame(std::move(av), {0, 1});
  f.pts = AV_NOPTS_VALUE;
  return f;
}

void DeviceBuffer::retire_on(cudaStream_t s) noexcept {
  try {
    readers_.retire_on(s);
  } catch (const std::exception& e) {  // no event for the reader before: wait for it instead
    spdlog::error("retiring a device frame: {}; waiting for the device instead", e.what());
    cudaDeviceSynchronize();
  }
}

DeviceBuffer::~DeviceBuffer() {
  // The owner (the strategy's next allocate, NVDEC's copy into a recycled
  // surface) must not overtake any reader.
  try {
    readers_.order_owner();
  } catch (const std::exception& e) {
    spdlog::error("releasing a device frame: {}; waiting for the device instead", e.what());
    cudaDeviceSynchronize();
  }
  if (mr_)
    mr_->deallocate(ptr_, bytes_, readers_.owner());
  else
    owner_.reset();
}

namespace {
// A decoded CUDA frame's planes, wrapped (no ready event: the caller adds one).
Frame wrap_cuda_frame(UniqueAVFrame av, AVRational tb, cudaStream_t stream) {
  VPIPE_EXPECTS(av->format == AV_PIX_FMT_CUDA && av->hw_frames_ctx, "not a CUDA frame");
  const auto* frames = reinterpret_cast<const AVHWFramesContext*>(av->hw_frames_ctx->data);
  Frame f;
  f.format = {frames->sw_format, av->width, av->height};
  f.pts = av->best_effort_timestamp != AV_NOPTS_VALUE ? av->best_effort_timestamp : av->pts;
  f.duration = duration_of(*av);
  f.time_base = tb;
  f.memory = MemoryKind::kDevice;
  set_planes(f, *av);
  f.side_data = carried_side_data(*av);
  f.fields = field_order_of(*av);
  void* base = av->data[0];
  const std::size_t bytes = av->buf[0] ? av->buf[0]->size : 0;
  f.device = std::make_shared<DeviceBuffer>(std::shared_ptr<void>(av.release(),
                                                                  [](void* p) {
                                                                    auto* frame =
                                                                        static_cast<AVFrame*>(p);
                                                                    av_frame_free(&frame);
                                                                  }),
                                            base, bytes, stream);
  return f;
}
}  // namespace

Frame Frame::of_cuda_frame(UniqueAVFrame av, AVRational tb, cudaStream_t stream) {
  Frame f = wrap_cuda_frame(std::move(av), tb, stream);
  f.ready = std::make_shared<ReadyEvent>(stream);
  return f;
}

Frame Frame::copy_of_cuda_frame(UniqueAVFrame av, AVRational tb, DeviceMemoryResource& mr,
                                cudaStream_t stream) {
  const Frame src = wrap_cuda_frame(std::move(av), tb, stream);  // read on its own stream
  return copy_on_device(src, mr, stream);  // src goes now: its next writer is on `stream` too
}

Frame Frame::copy_on_device(const Frame& src, DeviceMemoryResource& mr, cudaStream_t stream) {
  if (src.ready) src.ready->wait_on(stream);
  Frame dst = allocate_device(src.format, mr, stream);
  for (int p = 0; p < src.num_planes; ++p) {
    const auto k = static_cast<std::size_t>(p);
    cuda::copy_plane(src.planes[k], dst.planes[k].data, dst.planes[k].pitch,
                     cudaMemcpyDeviceToDevice, stream);
  }
  dst.copy_props_from(src);
  dst.ready = std::make_shared<ReadyEvent>(stream);
  return dst;
}

Frame Frame::allocate_device(const FrameFormat& format, DeviceMemoryResource& mr,
                             cudaStream_t stream) {
  const PlaneLayout layout = plane_layout(format);
  std::array<std::size_t, 4> offset{}, pitch{};
  std::size_t total = 0;
  for (int p = 0; p < layout.count; ++p) {
    const auto& s = layout.planes[static_cast<std::size_t>(p)];
    pitch[static_cast<std::size_t>(p)] =
        (static_cast<std::size_t>(s.width) * static_cast<std::size_t>(s.channels) + 255) / 256 *
        256;
    offset[static_cast<std::size_t>(p)] = total;
    total += pitch[static_cast<std::size_t>(p)] * static_cast<std::size_t>(s.height);
  }
  Frame f;
  f.format = format;
  f.memory = MemoryKind::kDevice;
  f.device = std::make_shared<DeviceBuffer>(mr, std::max<std::size_t>(total, 256), stream);
  f.num_planes = layout.count;
  for (int p = 0; p < layout.count; ++p) {
    const auto k = static_cast<std::size_t>(p);
    const auto& s = layout.planes[k];
    f.planes[k] = {f.device->data() + offset[k], s.width, s.height, s.channels, pitch[k]};
  }
  return f;
}

void Frame::copy_props_from(const Frame& other) {
  pts = other.pts;
  duration = other.duration;
  time_base = other.time_base;
  index = other.index;
  origin = other.origin;
  ticket = other.ticket;
  side_data = other.side_data;
  if (av && side_data) add_side_data(*side_data, av.get());
  set_fields(other.fields);
}

void Frame::set_fields(FieldOrder order) {
  fields = order;
  if (av) set_field_order(order, *av);
}

FieldOrder field_order_of(const AVFrame& av) {
  if (!av.interlaced_frame) return FieldOrder::kProgressive;
  return av.top_field_first ? FieldOrder::kTopFirst : FieldOrder::kBottomFirst;
}

void set_field_order(FieldOrder fields, AVFrame& av) {
  av.interlaced_frame = fields != FieldOrder::kProgressive;
  av.top_field_first = fields == FieldOrder::kTopFirst;
}

bool is_rgb(AVPixelFormat pix_fmt) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pix_fmt);
  return d && (d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL));
}

bool is_jpeg_range(AVPixelFormat pix_fmt) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pix_fmt);
  return d && std::string_view(d->name).substr(0, 4) == "yuvj";
}

bool splits_into_fields(AVPixelFormat pix_fmt, int height) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pix_fmt);
  return d && height % (2 << d->log2_chroma_h) == 0;
}

std::string to_string(FieldOrder fields) {
  switch (fields) {
    case FieldOrder::kTopFirst:
      return "interlaced, top field first";
    case FieldOrder::kBottomFirst:
      return "interlaced, bottom field first";
    default:
      return "progressive";
  }
}

}  // namespace vpipe
