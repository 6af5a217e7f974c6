// What CUDA can see on this machine, without throwing when there is nothing:
// the development machines and CI have nvcc but no GPU and no driver.
#pragma once

#include <string>
#include <vector>

namespace vpipe {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  std::size_t total_memory = 0;
  std::size_t free_memory = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int multiprocessors = 0;
  bool memory_pools = false;  // cudaDevAttrMemoryPoolsSupported
};

struct CudaSystemInfo {
  int driver_version = 0;   // e.g. 13000; 0 when no driver is installed
  int runtime_version = 0;  // the runtime vpipe was built with
  std::vector<CudaDeviceInfo> devices;
  std::string unavailable_reason;  // set when devices is empty
};

[[nodiscard]] CudaSystemInfo query_cuda_system();

// "13.0" from 13000.
[[nodiscard]] std::string cuda_version_string(int version);

// Empty when a usable CUDA device exists, else why not ("no CUDA driver ...").
// GPU tests skip with this text.
[[nodiscard]] std::string cuda_unavailable_reason();

}  // namespace vpipe
