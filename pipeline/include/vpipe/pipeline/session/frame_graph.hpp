// FrameGraph: where the upload and the download go. It wires a negotiated
// chain into a Pipeline, a stage per CPU step and one per run of CUDA steps:
//
//   frames ─► [CPU steps] ─► upload ─► CUDA steps ─► download ─► [CPU steps] ─► …
//                           (unless the frames are on the device already: NVDEC)
//
// A download straight after a run of CUDA steps is that run's stage's last
// step, on its stream (CudaRunEnd: "cuda:…+download"); one stage of its own
// only where frames reach it otherwise.
//
// and owns the staging rings it makes. Ring slots are frames: the pipeline's
// and the encoder's (a download slot is the encoder's input frame), so a
// FrameGraph is declared before both and outlives them. transcode, soak and
// the benches all build their frame path through it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/pipeline/filters/cuda_graph.hpp"
#include "vpipe/pipeline/filters/cuda_stages.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/filters/rate_stage.hpp"
#include "vpipe/pipeline/graph/fan_out.hpp"
#include "vpipe/pipeline/graph/pipeline.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

namespace vpipe {

// The CUDA path's parts, owned by the caller, outliving the pipeline.
struct CudaPath {
  DeviceMemoryResource* memory = nullptr;  // device frames (null: CPU only)
  StreamSet* streams = nullptr;            // one stream per CUDA stage
  HostMemory host = HostMemory::kPinned;   // staging rings
  bool download_copy = false;              // A/B: copy downloads out of the slot
  bool graphs = false;  // each run of CUDA filters as one CUDA Graph stage (cuda_graph.hpp)
};

class FrameGraph {
 public:
  FrameGraph(CudaPath cuda, DropPolicy drop, QueuePlan queues)
      : cuda_(cuda), drop_(drop), queues_(queues) {}
  FrameGraph(const FrameGraph&) = delete;
  FrameGraph& operator=(const FrameGraph&) = delete;

  // A frame queue with the drop policy (packet queues always block: a dropped
  // packet would break decoding).
  [[nodiscard]] QueuePtr<Frame> frame_queue(Pipeline& pipeline, std::string name,
                                            std::size_t capacity) const;
  // Adds `chain` after `frames` (device frames when `on_device`); the steps in
  // `cuda` run as CUDA filters. Returns the last queue.
  QueuePtr<Frame> add_chain(Pipeline& pipeline, QueuePtr<Frame> frames,
                            std::vector<ConfiguredFilter> chain, std::optional<CudaSegment> cuda,
                            bool on_device);
  // One output of several (after the fork): every stage added from here runs
  // as a BranchStage, so its exception fails that output alone (fan_out.hpp).
  void isolate(std::shared_ptr<BranchHealth> health, std::string label) {
    health_ = std::move(health);
    label_ = std::move(label);
  }
  // --frames N where the chain changes the rate: N counts the frames its rate stages send on
  // (as FFmpeg's -frames:v counts output frames), so they stop there. Before add_chain.
  void limit_rate_output(std::optional<std::int64_t> most) { most_frames_ = most; }
  // Brings frames of `format` back to the host if they are on the device.
  QueuePtr<Frame> to_host(Pipeline& pipeline, QueuePtr<Frame> frames, const FrameFormat& format);
  [[nodiscard]] bool on_device() const noexcept { return on_device_; }

  // What it made, for the report (null where it made none).
  [[nodiscard]] const PinnedRing* upload_ring() const noexcept { return upload_ring_; }
  [[nodiscard]] const PinnedRing* download_ring() const noexcept { return download_ring_; }
  [[nodiscard]] const UploadStage* upload_stage() const noexcept { return upload_stage_; }
  [[nodiscard]] std::size_t pinned_bytes() const;
  // Each rate stage's counts (fps=: frames in, out, dropped, repeated), in chain order; read
  // after the run.
  [[nodiscard]] std::vector<RateStats> rate_stats() const;
  // --graphs on: every graph stage's launches, captures and refused updates, summed.
  [[nodiscard]] std::optional<GraphStats> graph_stats() const;

 private:
  QueuePtr<Frame> upload(Pipeline& pipeline, QueuePtr<Frame> frames, const FrameFormat& format);
  QueuePtr<Frame> download(Pipeline& pipeline, QueuePtr<Frame> frames, const FrameFormat& format);
  // A run of consecutive CUDA steps as one stage: a CudaGraphStage with --graphs on, else a
  // CudaFilterStage (a launch per kernel).
  QueuePtr<Frame> add_cuda_run(Pipeline& pipeline, QueuePtr<Frame> frames,
                               std::vector<ConfiguredFilter> run);
  // A rate-changing step (fps=) as a RateStage of its own.
  QueuePtr<Frame> add_rate(Pipeline& pipeline, QueuePtr<Frame> frames, ConfiguredFilter step);
  // Every stage goes through here: wrapped when the graph is a branch's.
  void add(Pipeline& pipeline, std::unique_ptr<Stage<Frame, Frame>> stage, QueuePtr<Frame> in,
           QueuePtr<Frame> out);
  CudaPath cuda_;
  DropPolicy drop_;
  QueuePlan queues_;
  bool on_device_ = false;
  std::vector<std::unique_ptr<PinnedRing>> rings_;
  PinnedRing* upload_ring_ = nullptr;
  PinnedRing* download_ring_ = nullptr;
  UploadStage* upload_stage_ = nullptr;
  std::vector<const CudaGraphStage*> graph_stages_;
  std::vector<const RateStage*> rate_stages_;
  std::optional<std::int64_t> most_frames_;
  // The last CUDA run's end and the queue it emits into: a download of that
  // queue is the run's own (CudaRunEnd), not a stage of its own.
  CudaRunEnd* run_end_ = nullptr;
  const BoundedQueue<Frame>* run_end_queue_ = nullptr;
  std::shared_ptr<BranchHealth> health_;  // isolate(): the branch's (null: the pipeline's)
  std::string label_;
};

}  // namespace vpipe
