// `vpipe bench kernels`: the CUDA filter kernels' throughput (see bench_kernels.cpp).
#pragma once

#include <string>

namespace vpipe::bench {

struct KernelBenchOptions {
  bool quick = false;  // fewer batches
  bool once = false;   // each case run once, for a profiler (ncu): no measurement
  std::string json_path;
};

// Prints a markdown table; 0 when every goal is met, 1 otherwise, 2 without a GPU.
int run_kernel_bench(const KernelBenchOptions& options);

}  // namespace vpipe::bench
