#include "vpipe/memory/cuda_event.hpp"

#include <mutex>
#include <utility>
#include <vector>

#include "vpipe/memory/errors.hpp"

namespace vpipe {

CudaEvent::CudaEvent(Timing timing) {
  VPIPE_CUDA_TRY(cudaGetDevice(&device_));
  VPIPE_CUDA_TRY(cudaEventCreateWithFlags(
      &event_, timing == Timing::kOn ? cudaEventDefault : cudaEventDisableTiming));
}
CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);
}
CudaEvent::CudaEvent(CudaEvent&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}
CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
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

namespace {
constexpr std::size_t kMaxSpare = 512;  // per device; more are destroyed
constexpr int kMaxDevices = 64;

struct Spares {
  std::mutex mutex;
  std::vector<CudaEvent> events[kMaxDevices];
};
// Never destroyed: events still in the lists at exit go with the context
// (destroying them after the runtime unloads would fail).
Spares& spares() {
  static auto* s = new Spares;
  return *s;
}
}  // namespace

CudaEvent EventPool::take() {
  int device = 0;
  VPIPE_CUDA_TRY(cudaGetDevice(&device));
  if (device >= 0 && device < kMaxDevices) {
    Spares& s = spares();
    std::lock_guard lock(s.mutex);
    auto& list = s.events[device];
    if (!list.empty()) {
      CudaEvent e = std::move(list.back());
      list.pop_back();
      return e;
    }
  }
  return CudaEvent{};
}

void EventPool::give(CudaEvent event) noexcept {
  if (!event.get() || event.device() < 0 || event.device() >= kMaxDevices) return;
  Spares& s = spares();
  std::lock_guard lock(s.mutex);
  auto& list = s.events[event.device()];
  if (list.size() < kMaxSpare) list.push_back(std::move(event));
}

RecordedEvent::RecordedEvent(cudaStream_t producer) : event_(EventPool::take()) {
  event_.record(producer);
}

}  // namespace vpipe
