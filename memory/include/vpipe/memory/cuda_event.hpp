// The one CUDA event wrapper: CudaEvent owns an event (timing off unless
// asked). CudaFences, the frames' ReadyEvent, the release of decoder surfaces
// and the benches use it. Events are not recycled between frames: on the H200
// a per-device free list of events made the NVDEC pipeline about 4 % slower
// than creating one per use (docs/results/event-pool-ab-h200-2026-12-01-3415dc5).
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

namespace vpipe {

class CudaEvent {
 public:
  enum class Timing { kOff, kOn };
  explicit CudaEvent(Timing timing = Timing::kOff);  // an event of the current device
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  void record(cudaStream_t stream);
  void wait_on(cudaStream_t consumer) const;  // the consumer's stream waits; the host does not
  void synchronize() const;                   // blocks the calling thread
  [[nodiscard]] bool done() const;            // cudaEventQuery, no blocking
  // Milliseconds from `start` to this event (both recorded with Timing::kOn; waits for this one).
  [[nodiscard]] float elapsed_ms_since(const CudaEvent& start) const;
  [[nodiscard]] cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_{};
};

// An event recorded on the producer's stream: "the work enqueued so far is done".
class RecordedEvent {
 public:
  explicit RecordedEvent(cudaStream_t producer);
  RecordedEvent(const RecordedEvent&) = delete;
  RecordedEvent& operator=(const RecordedEvent&) = delete;
  void wait_on(cudaStream_t consumer) const { event_.wait_on(consumer); }
  void synchronize() const { event_.synchronize(); }
  [[nodiscard]] bool done() const { return event_.done(); }

 private:
  CudaEvent event_;
};

}  // namespace vpipe
