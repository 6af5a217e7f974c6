#include "vpipe/memory/cuda_event.hpp"

#include <utility>

#include "vpipe/base/errors.hpp"

namespace vpipe {

CudaEvent::CudaEvent(Timing timing) {
  VPIPE_CUDA_TRY(cudaEventCreateWithFlags(
      &event_, timing == Timing::kOn ? cudaEventDefault : cudaEventDisableTiming));
}
CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);
}
CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void CudaEvent::record(cudaStream_t stream) { VPIPE_CUDA_TRY(cudaEventRecord(event_, stream)); }
void CudaEvent::wait_on(cudaStream_t consumer) const {
  VPIPE_CUDA_TRY(cudaStreamWaitEvent(consumer, event_));
}
void CudaEvent::synchronize() const { VPIPE_CUDA_TRY(cudaEventSynchronize(event_)); }
bool CudaEvent::done() const {
  const cudaError_t e = cudaEventQuery(event_);
  if (e == cudaErrorNotReady) return false;
  VPIPE_CUDA_TRY(e);
  return true;
}

float CudaEvent::elapsed_ms_since(const CudaEvent& start) const {
  synchronize();
  float ms = 0;
  VPIPE_CUDA_TRY(cudaEventElapsedTime(&ms, start.event_, event_));
  return ms;
}

RecordedEvent::RecordedEvent(cudaStream_t producer) { event_.record(producer); }

}  // namespace vpipe
