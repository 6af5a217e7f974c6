#include "vpipe/memory/fence.hpp"

#include <cassert>

#include "vpipe/memory/errors.hpp"

namespace vpipe {

CudaFences::~CudaFences() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

FenceId CudaFences::record(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  FenceId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    cudaEvent_t e{};
    VPIPE_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
    id = static_cast<FenceId>(events_.size() - 1);
  }
  VPIPE_CUDA_TRY(cudaEventRecord(events_[id], stream));
  return id;
}

bool CudaFences::ready(FenceId id) {
  cudaEvent_t e;
  {
    std::lock_guard lock(mutex_);
    e = events_.at(id);
  }
  const cudaError_t s = cudaEventQuery(e);
  if (s == cudaErrorNotReady) return false;
  VPIPE_CUDA_TRY(s);
  return true;
}

void CudaFences::wait(FenceId id) {
  cudaEvent_t e;
  {
    std::lock_guard lock(mutex_);
    e = events_.at(id);
  }
  VPIPE_CUDA_TRY(cudaEventSynchronize(e));
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
