#include "vpipe/memory/fence.hpp"

#include <cassert>

#include "vpipe/memory/errors.hpp"

namespace vpipe {

FenceId CudaFences::record(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  FenceId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    events_.emplace_back();
    id = static_cast<FenceId>(events_.size() - 1);
  }
  events_[id].record(stream);
  return id;
}

bool CudaFences::ready(FenceId id) {
  cudaEvent_t e;
  {
    std::lock_guard lock(mutex_);  // (events_ may grow, moving its elements; handles stay)
    e = events_.at(id).get();
  }
  const cudaError_t s = cudaEventQuery(e);  // outside the lock
  if (s == cudaErrorNotReady) return false;
  VPIPE_CUDA_TRY(s);
  return true;
}

void CudaFences::wait(FenceId id) {
  cudaEvent_t e;
  {
    std::lock_guard lock(mutex_);
    e = events_.at(id).get();
  }
  VPIPE_CUDA_TRY(cudaEventSynchronize(e));  // outside the lock: other streams' fences go on
}

void CudaFences::release(FenceId id) noexcept {
  std::lock_guard lock(mutex_);
  free_ids_.push_back(id);
}

FenceId ManualFences::record(cudaStream_t) {
  done_.push_back(false);
  return static_cast<FenceId>(done_.size() - 1);
}

}  // namespace vpipe
