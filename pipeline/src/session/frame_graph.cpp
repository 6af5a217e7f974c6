#include "vpipe/pipeline/session/frame_graph.hpp"

#include <fmt/format.h>

#include "vpipe/pipeline/filters/filter_stage.hpp"
#include "vpipe/pipeline/filters/rate_stage.hpp"
#include "vpipe/pipeline/io/media_stages.hpp"

namespace vpipe {

QueuePtr<Frame> FrameGraph::frame_queue(Pipeline& pipeline, std::string name,
                                        std::size_t capacity) const {
  auto q = pipeline.make_queue<Frame>(std::move(name), capacity);
  q->set_policy(drop_);
  return q;
}

QueuePtr<Frame> FrameGraph::upload(Pipeline& pipeline, QueuePtr<Frame> frames,
                                   const FrameFormat& format) {
  VPIPE_EXPECTS(cuda_.memory && cuda_.streams, "frame graph: a CUDA step needs device memory");
  rings_.push_back(
      std::make_unique<PinnedRing>(queues_.upload_slots, packed_bytes(format), cuda_.host));
  upload_ring_ = rings_.back().get();
  auto up = frame_queue(pipeline, "upload→", queues_.frames);
  auto stage = std::make_unique<UploadStage>(*cuda_.memory, *upload_ring_, cuda_.streams->make());
  upload_stage_ = stage.get();
  add(pipeline, std::move(stage), std::move(frames), up);
  on_device_ = true;
  return up;
}

QueuePtr<Frame> FrameGraph::download(Pipeline& pipeline, QueuePtr<Frame> frames,
                                     const FrameFormat& format) {
  rings_.push_back(
      std::make_unique<PinnedRing>(queues_.download_slots, staged_bytes(format), cuda_.host));
  download_ring_ = rings_.back().get();
  on_device_ = false;
  if (run_end_ && frames.get() == run_end_queue_) {  // straight after a CUDA run: it downloads
    run_end_->download_into(*download_ring_, cuda_.download_copy);
    run_end_ = nullptr;
    return frames;
  }
  auto down = frame_queue(pipeline, "download→", queues_.frames);
  add(pipeline,
      std::make_unique<DownloadStage>(*download_ring_, cuda_.streams->make(), cuda_.download_copy),
      std::move(frames), down);
  return down;
}

QueuePtr<Frame> FrameGraph::add_chain(Pipeline& pipeline, QueuePtr<Frame> frames,
                                      std::vector<ConfiguredFilter> chain,
                                      std::optional<CudaSegment> cuda, bool on_device) {
  on_device_ = on_device;
  auto retimes = [&](std::size_t i) { return chain[i].filter->rate_change().has_value(); };
  for (std::size_t i = 0; i < chain.size(); ++i) {
    auto& step = chain[i];
    if (retimes(i)) {  // on whichever side the frames are: it moves no pixel
      frames = add_rate(pipeline, std::move(frames), std::move(step));
      continue;
    }
    const bool here_on_gpu = cuda && cuda->contains(i);
    if (here_on_gpu && !on_device_) frames = upload(pipeline, std::move(frames), step.in);
    if (!here_on_gpu && on_device_) frames = download(pipeline, std::move(frames), step.in);
    if (here_on_gpu) {  // this step and the CUDA steps after it: one stage
      std::vector<ConfiguredFilter> run;
      while (i < chain.size() && cuda->contains(i) && !retimes(i))
        run.push_back(std::move(chain[i++]));
      --i;  // the loop's ++i moves past the run's last step
      frames = add_cuda_run(pipeline, std::move(frames), std::move(run));
      continue;
    }
    auto next = frame_queue(pipeline, fmt::format("{}→", step.label), queues_.frames);
    add(pipeline, std::make_unique<FilterStage>(std::move(step)), std::move(frames), next);
    frames = std::move(next);
  }
  return frames;
}

QueuePtr<Frame> FrameGraph::add_cuda_run(Pipeline& pipeline, QueuePtr<Frame> frames,
                                         std::vector<ConfiguredFilter> run) {
  auto next = frame_queue(pipeline, fmt::format("{}→", run.back().label), queues_.frames);
  if (cuda_.graphs) {  // one graph launch a frame
    auto stage = std::make_unique<CudaGraphStage>(std::move(run), *cuda_.memory,
                                                  cuda_.streams->make(), cuda_.streams->make());
    graph_stages_.push_back(stage.get());
    run_end_ = &stage->end();
    add(pipeline, std::move(stage), std::move(frames), next);
  } else {  // a launch per kernel
    auto stage =
        std::make_unique<CudaFilterStage>(std::move(run), *cuda_.memory, cuda_.streams->make());
    run_end_ = &stage->end();
    add(pipeline, std::move(stage), std::move(frames), next);
  }
  run_end_queue_ = next.get();
  return next;
}

QueuePtr<Frame> FrameGraph::add_rate(Pipeline& pipeline, QueuePtr<Frame> frames,
                                     ConfiguredFilter step) {
  auto next = frame_queue(pipeline, fmt::format("{}→", step.label), queues_.frames);
  auto stage = std::make_unique<RateStage>(std::move(step), most_frames_);
  rate_stages_.push_back(stage.get());
  add(pipeline, std::move(stage), std::move(frames), next);
  return next;
}

std::vector<RateStats> FrameGraph::rate_stats() const {
  std::vector<RateStats> stats;
  for (const auto* r : rate_stages_) stats.push_back(r->stats());
  return stats;
}

void FrameGraph::add(Pipeline& pipeline, std::unique_ptr<Stage<Frame, Frame>> stage,
                     QueuePtr<Frame> in, QueuePtr<Frame> out) {
  if (health_)
    stage = std::make_unique<BranchStage<Frame, Frame>>(std::move(stage), health_, label_);
  pipeline.add_stage<Frame, Frame>(std::move(stage), std::move(in), std::move(out));
}

QueuePtr<Frame> FrameGraph::to_host(Pipeline& pipeline, QueuePtr<Frame> frames,
                                    const FrameFormat& format) {
  return on_device_ ? download(pipeline, std::move(frames), format) : frames;
}

std::optional<GraphStats> FrameGraph::graph_stats() const {
  if (graph_stages_.empty()) return std::nullopt;
  GraphStats sum;
  for (const auto* g : graph_stages_) {
    const auto s = g->stats();
    sum.launches += s.launches;
    sum.captures += s.captures;
    sum.updates_refused += s.updates_refused;
    if (sum.fallback.empty()) sum.fallback = s.fallback;
  }
  return sum;
}

std::size_t FrameGraph::pinned_bytes() const {
  std::size_t bytes = 0;
  for (const auto& r : rings_) bytes += r->pinned_bytes();
  return bytes;
}

}  // namespace vpipe
