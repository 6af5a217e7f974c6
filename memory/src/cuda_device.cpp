#include "vpipe/memory/cuda_device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace vpipe {

std::string cuda_version_string(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

CudaSystemInfo query_cuda_system() {
  CudaSystemInfo info;
  cudaRuntimeGetVersion(&info.runtime_version);
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) info.driver_version = 0;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    info.unavailable_reason =
        status == cudaSuccess ? std::string("no CUDA device found")
                              : fmt::format("no usable CUDA device: {} ({})",
                                            cudaGetErrorString(status), cudaGetErrorName(status));
    return info;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    CudaDeviceInfo dev;
    dev.index = d;
    dev.name = prop.name;
    dev.total_memory = prop.totalGlobalMem;
    dev.cc_major = prop.major;
    dev.cc_minor = prop.minor;
    dev.multiprocessors = prop.multiProcessorCount;
    int value = 0;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrMemoryPoolsSupported, d) == cudaSuccess)
      dev.memory_pools = value != 0;
    int current = 0;
    cudaGetDevice(&current);
    if (cudaSetDevice(d) == cudaSuccess) {
      std::size_t free_b = 0, total_b = 0;
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) dev.free_memory = free_b;
      cudaSetDevice(current);
    }
    info.devices.push_back(std::move(dev));
  }
  (void)cudaGetLastError();
  return info;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return fmt::format("no usable CUDA device on this machine: {} ({})", cudaGetErrorString(status),
                       cudaGetErrorName(status));
  }
  if (count == 0) return "no CUDA device on this machine";
  return {};
}

}  // namespace vpipe
