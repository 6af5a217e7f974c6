#include <cassert>

#include "vpipe/base/errors.hpp"
#include "vpipe/memory/device_resource.hpp"

namespace vpipe {

void* NaiveResource::do_allocate(std::size_t bytes, cudaStream_t /*stream*/) {
  void* ptr = nullptr;
  VPIPE_CUDA_TRY(cudaMalloc(&ptr, bytes));
  live_ += bytes;
  return ptr;
}

void NaiveResource::do_deallocate(void* ptr, std::size_t bytes, cudaStream_t /*stream*/) noexcept {
  [[maybe_unused]] const cudaError_t status = cudaFree(ptr);
  assert(status == cudaSuccess);
  live_ -= bytes;
}

ResourceUsage NaiveResource::usage() const {
  ResourceUsage u;
  u.reserved = u.used = live_.load();
  return u;
}

}  // namespace vpipe
