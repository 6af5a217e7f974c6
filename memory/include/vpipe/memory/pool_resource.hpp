// `pool`: stream-ordered allocation from a dedicated cudaMemPool_t through
// cudaMallocFromPoolAsync / cudaFreeAsync.
//
// Memory freed on a stream is reusable by later work on that stream at once,
// and by other streams once the driver sees the free has completed (it may
// insert event dependencies; see cudaMemPoolReuse* attributes). The release
// threshold says how much freed memory the pool keeps when a stream or the
// device synchronizes: the default keeps everything (no trim trap); 0 gives
// it all back at each synchronize, which is the "trim trap" the benchmarks show.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "vpipe/memory/device_resource.hpp"

namespace vpipe {

struct PoolOptions {
  std::uint64_t release_threshold = UINT64_MAX;  // bytes kept across synchronizations
  std::optional<std::size_t> max_size;           // hard cap on the pool (CUDA >= 12.2)
  int device = -1;                               // -1: the current device
  // false: a block is reused only by its own stream or after an ordering the
  // caller made (cudaMemPoolReuseAllowOpportunistic and ...InternalDependencies
  // off), so the driver never looks at other streams' frees on allocate.
  bool cross_stream_reuse = true;
};

class StreamOrderedPool final : public DeviceMemoryResource {
 public:
  explicit StreamOrderedPool(PoolOptions options = {});
  ~StreamOrderedPool() override;
  [[nodiscard]] std::string_view name() const noexcept override { return "pool"; }
  [[nodiscard]] ResourceUsage usage() const override;
  [[nodiscard]] std::optional<std::size_t> reserved_bytes() const override;  // one attribute query
  void trim() override;  // cudaMemPoolTrimTo(pool, 0)
  [[nodiscard]] cudaMemPool_t handle() const noexcept { return pool_; }

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  cudaMemPool_t pool_{};
};

}  // namespace vpipe
