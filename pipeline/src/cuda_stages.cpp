#include "vpipe/pipeline/cuda_stages.hpp"

#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

#include <cstring>

#include "vpipe/memory/errors.hpp"

namespace vpipe {

namespace {
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};
}  // namespace

std::size_t packed_bytes(const FrameFormat& format) {
  const PlaneLayout layout = plane_layout(format);
  std::size_t total = 0;
  for (int p = 0; p < layout.count; ++p) {
    const auto& s = layout.planes[static_cast<std::size_t>(p)];
    total += static_cast<std::size_t>(s.width) * static_cast<std::size_t>(s.channels) *
             static_cast<std::size_t>(s.height);
  }
  return total;
}

Flow UploadStage::process(Frame in, Output<Frame>& out) {
  NvtxRange range("vpipe::upload");
  VPIPE_EXPECTS(in.memory == MemoryKind::kHost && in.num_planes > 0, "upload: needs a host frame");
  Frame dev = Frame::allocate_device(in.format, mr_, stream_);
  if (packed_bytes(in.format) > ring_.slot_bytes()) {
    // Frames grew mid-stream beyond the staging slots: copy straight from the
    // frame (synchronously, so it may be freed), counted, rather than fail.
    for (int p = 0; p < in.num_planes; ++p) {
      const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
      const PlaneView& dst = dev.planes[static_cast<std::size_t>(p)];
      VPIPE_CUDA_TRY(cudaMemcpy2DAsync(dst.data, dst.pitch, src.data, src.pitch, src.row_bytes(),
                                       static_cast<std::size_t>(src.height),
                                       cudaMemcpyHostToDevice, stream_));
    }
    VPIPE_CUDA_TRY(cudaStreamSynchronize(stream_));
    unstaged_++;
    dev.copy_props_from(in);
    dev.ready = std::make_shared<ReadyEvent>(stream_);
    return out.emit(std::move(dev)) ? Flow::kContinue : Flow::kStop;
  }
  const PinnedRing::Slot slot = ring_.acquire();
  std::size_t offset = 0;
  for (int p = 0; p < in.num_planes; ++p) {
    const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
    const PlaneView& dst = dev.planes[static_cast<std::size_t>(p)];
    const std::size_t row = src.row_bytes();
    std::byte* staged = slot.data + offset;
    for (int y = 0; y < src.height; ++y) std::memcpy(staged + static_cast<std::size_t>(y) * row, src.row(y), row);
    VPIPE_CUDA_TRY(cudaMemcpy2DAsync(dst.data, dst.pitch, staged, row, row,
                                     static_cast<std::size_t>(src.height), cudaMemcpyHostToDevice,
                                     stream_));
    offset += row * static_cast<std::size_t>(src.height);
  }
  ring_.release(slot, stream_);  // reusable once this copy is done
  dev.copy_props_from(in);
  dev.ready = std::make_shared<ReadyEvent>(stream_);
  return out.emit(std::move(dev)) ? Flow::kContinue : Flow::kStop;
}

Flow CudaFilterStage::process(Frame in, Output<Frame>& out) {
  NvtxRange range("vpipe::cuda_filter");
  VPIPE_EXPECTS(in.memory == MemoryKind::kDevice, "cuda filter: needs a device frame");
  f_.follow(in.format);  // a resolution change: same filter, new buffers from the strategy
  in.ready->wait_on(stream_);
  Frame result = Frame::allocate_device(f_.out, mr_, stream_);
  f_.filter->process_cuda(in, result, CudaContext{stream_, mr_});
  result.copy_props_from(in);
  result.ready = std::make_shared<ReadyEvent>(stream_);
  in.device->retire_on(stream_);  // its last use was on this stream
  return out.emit(std::move(result)) ? Flow::kContinue : Flow::kStop;
}

Flow DownloadStage::process(Frame in, Output<Frame>& out) {
  NvtxRange range("vpipe::download");
  VPIPE_EXPECTS(in.memory == MemoryKind::kDevice, "download: needs a device frame");
  in.ready->wait_on(stream_);
  if (packed_bytes(in.format) > ring_.slot_bytes()) {  // grew mid-stream: unstaged copy
    Frame host = Frame::allocate_host(in.format);
    for (int p = 0; p < in.num_planes; ++p) {
      const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
      const PlaneView& dst = host.planes[static_cast<std::size_t>(p)];
      VPIPE_CUDA_TRY(cudaMemcpy2DAsync(dst.data, dst.pitch, src.data, src.pitch, src.row_bytes(),
                                       static_cast<std::size_t>(src.height),
                                       cudaMemcpyDeviceToHost, stream_));
    }
    in.device->retire_on(stream_);
    VPIPE_CUDA_TRY(cudaStreamSynchronize(stream_));
    unstaged_++;
    host.copy_props_from(in);
    return out.emit(std::move(host)) ? Flow::kContinue : Flow::kStop;
  }
  const PinnedRing::Slot slot = ring_.acquire();
  std::size_t offset = 0;
  for (int p = 0; p < in.num_planes; ++p) {
    const PlaneView& src = in.planes[static_cast<std::size_t>(p)];
    const std::size_t row = src.row_bytes();
    VPIPE_CUDA_TRY(cudaMemcpy2DAsync(slot.data + offset, row, src.data, src.pitch, row,
                                     static_cast<std::size_t>(src.height), cudaMemcpyDeviceToHost,
                                     stream_));
    offset += row * static_cast<std::size_t>(src.height);
  }
  in.device->retire_on(stream_);
  const ReadyEvent copied(stream_);
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
  return out.emit(std::move(host)) ? Flow::kContinue : Flow::kStop;
}

}  // namespace vpipe
