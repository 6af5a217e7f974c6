#include "vpipe/memory/pool_resource.hpp"

#include <cassert>

#include "vpipe/base/errors.hpp"

namespace vpipe {

StreamOrderedPool::StreamOrderedPool(PoolOptions options) {
  int device = options.device;
  if (device < 0) VPIPE_CUDA_TRY(cudaGetDevice(&device));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  if (options.max_size) props.maxSize = *options.max_size;
  VPIPE_CUDA_TRY(cudaMemPoolCreate(&pool_, &props));
  std::uint64_t threshold = options.release_threshold;
  VPIPE_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
  if (!options.cross_stream_reuse) {
    int off = 0;
    VPIPE_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowOpportunistic, &off));
    VPIPE_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &off));
  }
}

StreamOrderedPool::~StreamOrderedPool() {
  if (pool_) cudaMemPoolDestroy(pool_);
}

void* StreamOrderedPool::do_allocate(std::size_t bytes, cudaStream_t stream) {
  void* ptr = nullptr;
  VPIPE_CUDA_TRY(cudaMallocFromPoolAsync(&ptr, bytes, pool_, stream));
  return ptr;
}

void StreamOrderedPool::do_deallocate(void* ptr, std::size_t, cudaStream_t stream) noexcept {
  [[maybe_unused]] const cudaError_t s = cudaFreeAsync(ptr, stream);
  assert(s == cudaSuccess);
}

ResourceUsage StreamOrderedPool::usage() const {
  std::uint64_t reserved = 0, used = 0;
  cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved);
  cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used);
  ResourceUsage u;
  u.reserved = reserved;
  u.used = used;
  u.free_bytes = reserved - used;  // the pool's free list is the driver's: no largest block
  return u;
}

std::optional<std::size_t> StreamOrderedPool::reserved_bytes() const {
  std::uint64_t reserved = 0;
  VPIPE_CUDA_TRY(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved));
  return static_cast<std::size_t>(reserved);
}

void StreamOrderedPool::trim() { VPIPE_CUDA_TRY(cudaMemPoolTrimTo(pool_, 0)); }

}  // namespace vpipe
