#include "vpipe/pipeline/graph/pipeline.hpp"

#include <cuda_runtime_api.h>

#include <thread>

namespace vpipe {

Pipeline::~Pipeline() {
  for (auto& cancel : cancellers_) cancel();
}

void Pipeline::fail(std::exception_ptr error) noexcept {
  {
    std::lock_guard lock(error_mutex_);
    if (!first_error_) first_error_ = std::move(error);
  }
  failed_.store(true);
  for (auto& cancel : cancellers_) cancel();
}

void Pipeline::run() {
  // A CUDA device is current per thread: the stages run on the device the
  // caller made current (--gpus puts a stream's pipeline on its GPU); device 0,
  // every thread's default, needs no call (nor does a machine without CUDA).
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) device = 0;
  std::vector<std::jthread> threads;
  threads.reserve(nodes_.size());
  for (auto& node : nodes_) {
    threads.emplace_back([&n = *node, device] {
      if (device > 0) (void)cudaSetDevice(device);
      n.body(n);
    });
  }
  threads.clear();  // joins
  std::lock_guard lock(error_mutex_);
  if (first_error_) std::rethrow_exception(first_error_);
}

std::vector<StageStats> Pipeline::stage_stats() const {
  std::vector<StageStats> out;
  for (const auto& n : nodes_) {
    // Asked now, not when added: a stage's name can say what was joined to it
    // after (a CUDA run's "+download"). Every name comes from state fixed before run().
    out.push_back({n->stage->name(), n->items_in.load(), n->items_out.load(),
                   static_cast<double>(n->busy_ns.load()) * 1e-9,
                   static_cast<double>(n->item_ns.percentile(0.50)) * 1e-6,
                   static_cast<double>(n->item_ns.percentile(0.99)) * 1e-6,
                   static_cast<double>(n->item_ns.max()) * 1e-6, n->stage->gpu_ms_per_item(),
                   n->stage->phases()});
  }
  return out;
}

std::vector<QueueStats> Pipeline::queue_stats() const {
  std::vector<QueueStats> out;
  for (const auto& get : queue_stats_) out.push_back(get());
  return out;
}

}  // namespace vpipe
