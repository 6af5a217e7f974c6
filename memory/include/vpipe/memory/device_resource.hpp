// The interface every per-frame device memory strategy implements (RMM-style).
//
// Stream-ordering rules:
//  - allocate(bytes, stream) returns memory that is valid for work enqueued on
//    `stream` after the call; using it on another stream needs an event or a
//    synchronize first.
//  - deallocate(ptr, bytes, stream) frees `ptr` once the work already enqueued on
//    `stream` has finished; work on other streams that still uses `ptr` must be
//    ordered before that (record an event, make `stream` wait on it).
//  - The stream passed to deallocate must outlive the free. `bytes` must be the
//    size passed to allocate.
//  - Pointers are aligned to at least kAlignment bytes.
//  - allocate throws out_of_memory when memory (or a budget) runs out and
//    cuda_error on other CUDA failures; deallocate never throws.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <optional>
#include <string_view>

namespace vpipe {

// What a strategy holds from the device, as far as it can tell.
struct ResourceUsage {
  std::optional<std::size_t> reserved;      // taken from the device (pool/arena/slab size)
  std::optional<std::size_t> used;          // handed out and not yet freed
  std::optional<std::size_t> free_bytes;    // reserved, not handed out (own free list)
  std::optional<std::size_t> largest_free;  // largest block the free list could hand out
  // 1 − largest_free ÷ free_bytes, where the strategy sees its free list.
  [[nodiscard]] std::optional<double> fragmentation() const {
    if (!free_bytes || !largest_free) return std::nullopt;
    if (*free_bytes == 0) return 0.0;
    return 1.0 - static_cast<double>(*largest_free) / static_cast<double>(*free_bytes);
  }
};

class DeviceMemoryResource {
 public:
  static constexpr std::size_t kAlignment = 256;

  DeviceMemoryResource() = default;
  virtual ~DeviceMemoryResource() = default;
  DeviceMemoryResource(const DeviceMemoryResource&) = delete;
  DeviceMemoryResource& operator=(const DeviceMemoryResource&) = delete;

  [[nodiscard]] void* allocate(std::size_t bytes, cudaStream_t stream) {
    return do_allocate(bytes, stream);
  }
  void deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept {
    do_deallocate(ptr, bytes, stream);
  }
  // A short name a user types (`--mem naive`), or the adaptor stack's description.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  [[nodiscard]] virtual ResourceUsage usage() const { return {}; }
  // What it holds from the device now (usage().reserved), where a resource
  // can say so more cheaply than a whole usage() (the held-budget check asks
  // on every allocation).
  [[nodiscard]] virtual std::optional<std::size_t> reserved_bytes() const {
    return usage().reserved;
  }
  // Gives cached memory back to the device where the strategy caches any.
  virtual void trim() {}
  // True where deallocate synchronizes the whole device (cudaFree does).
  [[nodiscard]] virtual bool deallocate_synchronizes_device() const noexcept { return false; }

 private:
  virtual void* do_allocate(std::size_t bytes, cudaStream_t stream) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept = 0;
};

// `naive`: cudaMalloc / cudaFree for every buffer. cudaMalloc may block on
// other streams' work, and cudaFree synchronizes the whole device: that cost is
// what this strategy exists to show. The stream arguments are ignored.
class NaiveResource final : public DeviceMemoryResource {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "naive"; }
  [[nodiscard]] bool deallocate_synchronizes_device() const noexcept override { return true; }
  // It caches nothing: what it holds from the device is what it handed out.
  [[nodiscard]] ResourceUsage usage() const override;

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  std::atomic<std::size_t> live_{0};
};

}  // namespace vpipe
