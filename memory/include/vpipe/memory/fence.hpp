// Fences: "has the work enqueued on this stream so far finished?", as small
// ids. Resources that recycle memory themselves (vmm, slab, the pinned ring)
// record a fence when a buffer is freed on a stream and reuse the buffer only
// once the fence is ready: reuse is then safe across streams without any
// device-wide synchronization.
//
// CudaFences backs them with CUDA events (CudaEvent; created once, reused).
// Tests of the recycling logic use ManualFences, which complete on command.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "vpipe/memory/cuda_event.hpp"

namespace vpipe {

using FenceId = std::uint32_t;

class FenceSource {
 public:
  virtual ~FenceSource() = default;
  // A fence that is ready once all work enqueued on `stream` so far is done.
  virtual FenceId record(cudaStream_t stream) = 0;
  [[nodiscard]] virtual bool ready(FenceId id) = 0;  // non-blocking
  virtual void wait(FenceId id) = 0;                 // blocks the calling thread only
  // Work enqueued on `stream` from now on runs after the fence; the host does
  // not wait (stream-ordered reuse, as RMM does with cudaStreamWaitEvent).
  virtual void order_after(FenceId id, cudaStream_t stream) = 0;
  virtual void release(FenceId id) noexcept = 0;  // the id may be reused
};

class CudaFences final : public FenceSource {
 public:
  CudaFences() = default;
  CudaFences(const CudaFences&) = delete;
  CudaFences& operator=(const CudaFences&) = delete;
  FenceId record(cudaStream_t stream) override;
  bool ready(FenceId id) override;
  void wait(FenceId id) override;
  void order_after(FenceId id, cudaStream_t stream) override;
  void release(FenceId id) noexcept override;

 private:
  [[nodiscard]] cudaEvent_t event(FenceId id);
  std::mutex mutex_;
  std::vector<CudaEvent> events_;
  std::vector<FenceId> free_ids_;
};

// For tests: fences complete when complete() or complete_all() says so.
class ManualFences final : public FenceSource {
 public:
  FenceId record(cudaStream_t) override;
  bool ready(FenceId id) override { return done_.at(id); }
  void wait(FenceId id) override {
    done_.at(id) = true;
    ++waits_;
  }
  void order_after(FenceId id, cudaStream_t) override {
    (void)done_.at(id);
    ++stream_waits_;
  }
  void release(FenceId) noexcept override {}
  void complete(FenceId id) { done_.at(id) = true; }
  void complete_all() { done_.assign(done_.size(), true); }
  [[nodiscard]] int waits() const { return waits_; }                // host waits
  [[nodiscard]] int stream_waits() const { return stream_waits_; }  // order_after calls
  [[nodiscard]] FenceId last() const { return static_cast<FenceId>(done_.size() - 1); }

 private:
  std::vector<bool> done_;
  int waits_ = 0;
  int stream_waits_ = 0;
};

}  // namespace vpipe
