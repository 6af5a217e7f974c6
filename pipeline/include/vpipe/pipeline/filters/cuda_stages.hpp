// The CUDA segment of a transcode:
//
//   host frame ─► upload ─► filter ─► … ─► download ─► host frame
//                 (ring slot,  (kernels on     (ring slot,
//                  H2D on its   its stream)     D2H on its stream)
//                  stream)
//
// Each stage enqueues on its own CUDA stream, so uploads, kernels and
// downloads of different frames overlap; a frame carries a ReadyEvent that
// the next stage's stream waits on (no host blocking, no device-wide sync).
// Device frames come from the chosen memory strategy and go back to it on the
// stream of their last use. Streams and rings are owned by the caller and
// must outlive the pipeline.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

// An NVTX range (nsys shows it) for one stage's work on one frame.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// Host frames already in pinned memory (decoded through HostFramePool) are
// copied from directly, with a pinned ring; others go through a ring slot.
class UploadStage final : public Stage<Frame, Frame> {
 public:
  UploadStage(DeviceMemoryResource& mr, PinnedRing& ring, cudaStream_t stream)
      : mr_(mr), ring_(ring), stream_(stream) {}
  ~UploadStage() override;
  UploadStage(const UploadStage&) = delete;
  UploadStage& operator=(const UploadStage&) = delete;
  [[nodiscard]] std::string name() const override { return "upload"; }
  Flow process(Frame in, Output<Frame>& out) override;
  void finish(Output<Frame>& out) override;
  // Frames larger than the staging slots (the size grew mid-stream), copied unstaged.
  [[nodiscard]] std::int64_t unstaged() const noexcept { return unstaged_; }
  [[nodiscard]] std::int64_t direct() const noexcept { return direct_; }

 private:
  void reap(bool wait);  // drop source frames whose copy is done
  DeviceMemoryResource& mr_;
  PinnedRing& ring_;
  cudaStream_t stream_;
  std::int64_t unstaged_ = 0, direct_ = 0;
  std::deque<std::pair<std::shared_ptr<ReadyEvent>, Frame>> in_flight_;
};

// GPU time of a stage's work per frame: timing events around every 8th
// frame's work on the stage's stream, read back without blocking when their
// pair comes round again (a sample not done by then is dropped), and the rest
// at the end. Wall time on the GPU from the first to the last command: with
// other streams sharing the GPU, their kernels' overlap counts too.
class GpuTimer {
 public:
  void start(cudaStream_t stream);  // before the frame's work: samples every 8th call
  void stop(cudaStream_t stream);   // after it
  // Mean ms per sampled frame (waits for the samples in flight); nullopt: none.
  [[nodiscard]] std::optional<double> mean_ms() const;

 private:
  struct Sample {
    CudaEvent begin{CudaEvent::Timing::kOn}, end{CudaEvent::Timing::kOn};
    bool pending = false;
  };
  void harvest(Sample& s) const;  // a pending sample that is done
  static constexpr int kEvery = 8;
  mutable std::array<Sample, 4> samples_;
  std::size_t next_ = 0;
  std::int64_t calls_ = 0;
  Sample* current_ = nullptr;
  mutable double sum_ms_ = 0;
  mutable std::int64_t count_ = 0;
};

// A device frame to the host on a stream: the host frame is a ring slot
// (released with the frame), with a ReadyEvent: readers synchronize on it before
// touching the pixels. The DownloadStage's work, and the end of a CUDA run's
// (CudaRunEnd) where the run downloads its own frames.
class Downloader {
 public:
  // copy_out: the older way, for A/B benchmarks: wait for the copy here, then
  // memcpy the slot into a fresh host frame and recycle the slot at once.
  explicit Downloader(PinnedRing& ring, bool copy_out = false) : ring_(ring), copy_out_(copy_out) {}
  // `in`'s pixels must be ordered on `stream` already (its ReadyEvent waited on,
  // or written there); `in` is retired on `stream`.
  [[nodiscard]] Frame to_host(Frame in, cudaStream_t stream);

 private:
  Frame copied_out(Frame in, cudaStream_t stream);
  Frame unstaged(Frame in, cudaStream_t stream);  // grew past the slots mid-stream
  PinnedRing& ring_;
  bool copy_out_;
};

class DownloadStage final : public Stage<Frame, Frame> {
 public:
  DownloadStage(PinnedRing& ring, cudaStream_t stream, bool copy_out = false)
      : down_(ring, copy_out), stream_(stream) {}
  [[nodiscard]] std::string name() const override { return "download"; }
  Flow process(Frame in, Output<Frame>& out) override;

 private:
  Downloader down_;
  cudaStream_t stream_;
};

// How a CUDA run's stage hands on its frame: as a device frame with its
// ReadyEvent for the next stage, or, where a download would follow, downloaded
// on the run's own stream (FrameGraph: one stage, one thread hand-off and one
// cross-stream wait a frame fewer).
class CudaRunEnd {
 public:
  void download_into(PinnedRing& ring, bool copy_out) { down_.emplace(ring, copy_out); }
  [[nodiscard]] bool downloads() const noexcept { return down_.has_value(); }
  // `result` was written on `stream` (or, when `wait` is true, must first be waited for there).
  Flow emit(Frame result, cudaStream_t stream, Output<Frame>& out, bool wait = false);

 private:
  std::optional<Downloader> down_;
};

// A run of consecutive CUDA filters as one stage: per frame one wait on the input's
// event, the filters' kernels in order on the stage's stream (intermediate frames
// from the run's --mem strategy, freed on that stream after their reader), one
// ReadyEvent. A stage per filter cost each frame a thread hand-off, an event and a
// cross-stream wait per filter; with 14 streams of HEVC 10-bit (to_8bit + resize)
// each such stage spent ~2 ms of host time a frame on ~0.05 ms of GPU work
// (docs/RESULTS.md, section 13).
class CudaFilterStage final : public Stage<Frame, Frame> {
 public:
  CudaFilterStage(std::vector<ConfiguredFilter> run, DeviceMemoryResource& mr, cudaStream_t stream)
      : run_(std::move(run)), mr_(mr), stream_(stream) {}
  // "cuda:to_8bit,resize=1280x720", "+download" where it downloads its frames
  [[nodiscard]] std::string name() const override;
  Flow process(Frame in, Output<Frame>& out) override;
  [[nodiscard]] std::optional<double> gpu_ms_per_item() const override { return gpu_.mean_ms(); }
  CudaRunEnd& end() noexcept { return end_; }

 private:
  CudaRunEnd end_;
  std::vector<ConfiguredFilter> run_;
  DeviceMemoryResource& mr_;
  cudaStream_t stream_;
  GpuTimer gpu_;
};

// The filters of `run` that change frames, each configured for what reaches it (a
// resolution change mid-stream reconfigures them: no new filter, no new stage); the
// run's output format in `format`.
[[nodiscard]] std::vector<ConfiguredFilter*> configure_run(std::vector<ConfiguredFilter>& run,
                                                           FrameFormat& format);
// The steps on `stream`, intermediate frames and scratch from `inner`, the last one
// into `result`.
void run_steps(const std::vector<ConfiguredFilter*>& steps, const Frame& in, Frame& result,
               DeviceMemoryResource& inner, cudaStream_t stream);
// `in`'s properties (time, side data, fields) on the steps' `result`, its field order as the
// steps leave it (fields_after).
void take_props(Frame& result, const Frame& in, const std::vector<ConfiguredFilter*>& steps);
// "a,b,c" of the run's labels.
[[nodiscard]] std::string run_labels(const std::vector<ConfiguredFilter>& run);

// Non-blocking CUDA streams for a pipeline's stages, synchronized and
// destroyed together. Declare it before the Pipeline: frames still queued
// free their memory on these streams when the pipeline goes.
class StreamSet {
 public:
  StreamSet() = default;
  ~StreamSet();
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;
  cudaStream_t make();

 private:
  std::vector<cudaStream_t> streams_;
};

// Bytes of a frame's planes packed row after row (the upload slot size).
[[nodiscard]] std::size_t packed_bytes(const FrameFormat& format);
// Bytes of a frame with rows padded to 64 (the download slot size: the slot
// is the encoder's input frame).
[[nodiscard]] std::size_t staged_bytes(const FrameFormat& format);

}  // namespace vpipe
