// `vpipe bench kernels`: the CUDA filter kernels' throughput (see bench_kernels.cpp).
#pragma once

#include <string>

namespace vpipe::bench {

// Prints a markdown table; 0 when every goal is met, 1 otherwise, 2 without a GPU.
int run_kernel_bench(bool quick, const std::string& json_path);

}  // namespace vpipe::bench
