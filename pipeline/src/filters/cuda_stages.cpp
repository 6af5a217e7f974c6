#include "vpipe/pipeline/filters/cuda_stages.hpp"

#include <fmt/format.h>

#include <cstring>

#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/pipeline/graph/host_frames.hpp"

namespace vpipe {

cudaStream_t StreamSet::make() {
  cudaStream_t s{};
  VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  streams_.push_back(s);
  return s;
}

StreamSet::~StreamSet() {
  for (cudaStream_t s : streams_) {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
}

// Bytes of a frame's planes, each row padded to a multiple of `align`.
std::size_t frame_bytes(const FrameFormat& format, std::size_t align) {
  const PlaneLayout layout = plane_layout(format);
  std::size_t total = 0;
  for (int p = 0; p < layout.count; ++p) {
    const auto& s = layout.planes[static_cast<std::size_t>(p)];
    const std::size_t row =
        static_cast<std::size_t>(s.width) * static_cast<std::size_t>(s.channels);
    total += (row + align - 1) / align * align * static_cast<std::size_t>(s.height);
  }
  return total;
}

std::size_t packed_bytes(const FrameFormat& format) { return frame_bytes(format, 1); }

void UploadStage::reap(bool wait) {
  while (!in_flight_.empty() && (wait || in_flight_.front().first->done())) {
    if (wait) in_flight_.front().first->synchronize();
    in_flight_.pop_front();  // the source frame's buffer goes back to the decoder
  }
}

UploadStage::~UploadStage() {
  try {
    reap(true);
  } catch (...) {  // a failing device: the frames are dropped anyway
  }
}

void UploadStage::finish(Output<Frame>& /*out*/) { reap(true); }

Flow UploadStage::process(Frame in, Output<Frame>& out) {
  NvtxRange range("vpipe::upload");
  VPIPE_EXPECTS(in.memory == MemoryKind::kHost && in.num_planes > 0, "upload: needs a host frame");
  reap(false);
  Frame dev = Frame::allocate_device(in.format, mr_, stream_);
  const bool direct = ring_.kind() != HostMemory::kPageable && is_pinned_host(in.planes[0].data);
  if (direct || packed_bytes(in.format) > ring_.slot_bytes()) {
    // The decoder wrote into pinned memory (HostFramePool): copy from it, and
    // keep it until the copy is done. Or the frames grew mid-stream beyond
    // the staging slots: copy straight from the frame, counted, not fail.
    for (int p = 0; p < in.num_planes; ++p) {
      const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
      const PlaneView& dst = dev.planes[static_cast<std::size_t>(p)];
      cuda::copy_plane(src, dst.data, dst.pitch, cudaMemcpyHostToDevice, stream_);
    }
    dev.copy_props_from(in);
    dev.ready = std::make_shared<ReadyEvent>(stream_);
    if (direct) {
      direct_++;
      in_flight_.emplace_back(dev.ready, std::move(in));
    } else {
      VPIPE_CUDA_TRY(cudaStreamSynchronize(stream_));
      unstaged_++;
    }
    return out.emit(std::move(dev)) ? Flow::kContinue : Flow::kStop;
  }
  const PinnedRing::Slot slot = ring_.acquire();
  std::size_t offset = 0;
  for (int p = 0; p < in.num_planes; ++p) {
    const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
    const PlaneView& dst = dev.planes[static_cast<std::size_t>(p)];
    const std::size_t row = src.row_bytes();
    std::byte* staged = slot.data + offset;
    for (int y = 0; y < src.height; ++y)
      std::memcpy(staged + static_cast<std::size_t>(y) * row, src.row(y), row);
    cuda::copy_plane(PlaneView{reinterpret_cast<std::uint8_t*>(staged), src.width, src.height,
                               src.channels, row},
                     dst.data, dst.pitch, cudaMemcpyHostToDevice, stream_);
    offset += row * static_cast<std::size_t>(src.height);
  }
  ring_.release(slot, stream_);  // reusable once this copy is done
  dev.copy_props_from(in);
  dev.ready = std::make_shared<ReadyEvent>(stream_);
  return out.emit(std::move(dev)) ? Flow::kContinue : Flow::kStop;
}

void GpuTimer::start(cudaStream_t stream) {
  current_ = nullptr;
  if (calls_++ % kEvery != 0) return;
  Sample& s = samples_[next_];
  if (s.pending) harvest(s);
  if (s.pending) return;  // not done a whole round later: this frame goes unsampled
  s.begin.record(stream);
  current_ = &s;
}

void GpuTimer::stop(cudaStream_t stream) {
  if (!current_) return;
  current_->end.record(stream);
  current_->pending = true;
  current_ = nullptr;
  next_ = (next_ + 1) % samples_.size();
}

void GpuTimer::harvest(Sample& s) const {
  if (!s.end.done()) return;
  sum_ms_ += static_cast<double>(s.end.elapsed_ms_since(s.begin));
  ++count_;
  s.pending = false;
}

std::optional<double> GpuTimer::mean_ms() const {
  for (Sample& s : samples_)
    if (s.pending) {
      s.end.synchronize();
      harvest(s);
    }
  if (count_ == 0) return std::nullopt;
  return sum_ms_ / static_cast<double>(count_);
}

std::vector<ConfiguredFilter*> configure_run(std::vector<ConfiguredFilter>& run,
                                             FrameFormat& format) {
  std::vector<ConfiguredFilter*> steps;
  for (auto& f : run) {
    f.follow(format);
    format = f.out;
    if (!f.filter->is_identity()) steps.push_back(&f);
  }
  return steps;
}

void run_steps(const std::vector<ConfiguredFilter*>& steps, const Frame& in, Frame& result,
               DeviceMemoryResource& inner, cudaStream_t stream) {
  Frame cur = in;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Frame next =
        i + 1 == steps.size() ? result : Frame::allocate_device(steps[i]->out, inner, stream);
    steps[i]->filter->process_cuda(cur, next, CudaContext{stream, inner});
    cur = std::move(next);  // the intermediate before goes: freed after its reader, on `stream`
  }
}

void take_props(Frame& result, const Frame& in, const std::vector<ConfiguredFilter*>& steps) {
  result.copy_props_from(in);
  FieldOrder fields = in.fields;
  for (const ConfiguredFilter* step : steps) fields = fields_after(*step->filter, fields);
  result.set_fields(fields);
}

std::string run_labels(const std::vector<ConfiguredFilter>& run) {
  std::string labels;
  for (const auto& f : run) labels += (labels.empty() ? "" : ",") + f.label;
  return labels;
}

std::string CudaFilterStage::name() const {
  return "cuda:" + run_labels(run_) + (end_.downloads() ? "+download" : "");
}

Flow CudaFilterStage::process(Frame in, Output<Frame>& out) {
  NvtxRange range("vpipe::cuda_filter");
  VPIPE_EXPECTS(in.memory == MemoryKind::kDevice, "cuda filter: needs a device frame");
  FrameFormat format = in.format;
  const auto steps = configure_run(run_, format);
  if (steps.empty()) return end_.emit(std::move(in), stream_, out, /*wait=*/true);
  in.ready->wait_on(stream_);
  Frame result = Frame::allocate_device(format, mr_, stream_);
  gpu_.start(stream_);
  run_steps(steps, in, result, mr_, stream_);
  gpu_.stop(stream_);
  take_props(result, in, steps);
  in.device->retire_on(stream_);  // its last use was on this stream
  return end_.emit(std::move(result), stream_, out);
}

namespace {
struct SlotRef {
  PinnedRing* ring;
  PinnedRing::Slot slot;
};
void release_slot(void* opaque, std::uint8_t* /*data*/) {
  auto* ref = static_cast<SlotRef*>(opaque);
  ref->ring->release_now(ref->slot);
  delete ref;
}
}  // namespace

std::size_t staged_bytes(const FrameFormat& format) { return frame_bytes(format, 64); }

Frame Downloader::unstaged(Frame in, cudaStream_t stream) {
  Frame host = Frame::allocate_host(in.format);
  for (int p = 0; p < in.num_planes; ++p) {
    const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
    const PlaneView& dst = host.planes[static_cast<std::size_t>(p)];
    cuda::copy_plane(src, dst.data, dst.pitch, cudaMemcpyDeviceToHost, stream);
  }
  in.device->retire_on(stream);
  VPIPE_CUDA_TRY(cudaStreamSynchronize(stream));
  host.copy_props_from(in);
  return host;
}

Frame Downloader::to_host(Frame in, cudaStream_t stream) {
  VPIPE_EXPECTS(in.memory == MemoryKind::kDevice, "download: needs a device frame");
  if (staged_bytes(in.format) > ring_.slot_bytes()) return unstaged(std::move(in), stream);
  if (copy_out_) return copied_out(std::move(in), stream);
  // The frame is the ring slot itself: the encoder reads the pinned memory
  // the copy lands in, and the slot comes back when the frame is released.
  const PinnedRing::Slot slot = ring_.acquire();
  UniqueAVFrame av = make_av_frame();
  av->format = in.format.pix_fmt;
  av->width = in.format.width;
  av->height = in.format.height;
  auto* ref = new SlotRef{&ring_, slot};
  av->buf[0] = av_buffer_create(reinterpret_cast<std::uint8_t*>(slot.data), slot.bytes,
                                &release_slot, ref, 0);
  if (!av->buf[0]) {
    delete ref;
    ring_.release_now(slot);
    throw std::bad_alloc();
  }
  std::size_t offset = 0;
  for (int p = 0; p < in.num_planes; ++p) {
    const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
    const std::size_t pitch = (src.row_bytes() + 63) / 64 * 64;
    av->data[p] = reinterpret_cast<std::uint8_t*>(slot.data) + offset;
    av->linesize[p] = static_cast<int>(pitch);
    cuda::copy_plane(src, av->data[p], pitch, cudaMemcpyDeviceToHost, stream);
    offset += pitch * static_cast<std::size_t>(src.height);
  }
  in.device->retire_on(stream);
  Frame host = Frame::from_av_frame(std::move(av), in.time_base);
  host.copy_props_from(in);
  host.ready = std::make_shared<ReadyEvent>(stream);  // readers wait for the copy
  return host;
}

Frame Downloader::copied_out(Frame in, cudaStream_t stream) {
  const PinnedRing::Slot slot = ring_.acquire();
  std::size_t offset = 0;
  for (int p = 0; p < in.num_planes; ++p) {
    const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
    const std::size_t row = src.row_bytes();
    cuda::copy_plane(src, slot.data + offset, row, cudaMemcpyDeviceToHost, stream);
    offset += row * static_cast<std::size_t>(src.height);
  }
  in.device->retire_on(stream);
  const ReadyEvent copied(stream);
  Frame host = Frame::allocate_host(in.format);  // while the copy runs
  copied.synchronize();
  offset = 0;
  for (int p = 0; p < host.num_planes; ++p) {
    const PlaneView& dst = host.planes[static_cast<std::size_t>(p)];
    const std::size_t row = dst.row_bytes();
    for (int y = 0; y < dst.height; ++y)
      std::memcpy(dst.row(y), slot.data + offset + static_cast<std::size_t>(y) * row, row);
    offset += row * static_cast<std::size_t>(dst.height);
  }
  ring_.release_now(slot);
  host.copy_props_from(in);
  return host;
}

Flow DownloadStage::process(Frame in, Output<Frame>& out) {
  NvtxRange range("vpipe::download");
  VPIPE_EXPECTS(in.memory == MemoryKind::kDevice, "download: needs a device frame");
  in.ready->wait_on(stream_);
  return out.emit(down_.to_host(std::move(in), stream_)) ? Flow::kContinue : Flow::kStop;
}

Flow CudaRunEnd::emit(Frame result, cudaStream_t stream, Output<Frame>& out, bool wait) {
  if (!down_) {
    if (!wait) result.ready = std::make_shared<ReadyEvent>(stream);  // else: as it came
    return out.emit(std::move(result)) ? Flow::kContinue : Flow::kStop;
  }
  if (wait) result.ready->wait_on(stream);
  return out.emit(down_->to_host(std::move(result), stream)) ? Flow::kContinue : Flow::kStop;
}

}  // namespace vpipe
