#include "vpipe/memory/fence.hpp"

#include <cassert>

#include "vpipe/base/errors.hpp"

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

// The handle, looked up under the lock (events_ may grow, moving its
// elements; handles stay): CUDA calls on it run outside the lock.
cudaEvent_t CudaFences::event(FenceId id) {
  std::lock_guard lock(mutex_);
  return events_.at(id).get();
}

bool CudaFences::ready(FenceId id) {
  const cudaError_t s = cudaEventQuery(event(id));
  if (s == cudaErrorNotReady) return false;
  VPIPE_CUDA_TRY(s);
  return true;
}

void CudaFences::wait(FenceId id) { VPIPE_CUDA_TRY(cudaEventSynchronize(event(id))); }

void CudaFences::order_after(FenceId id, cudaStream_t stream) {
  VPIPE_CUDA_TRY(cudaStreamWaitEvent(stream, event(id)));
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
