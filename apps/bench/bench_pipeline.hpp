// `vpipe bench pipeline`: the transcode's throughput per decoder × memory
// strategy × host staging, split into its ceilings (see bench_pipeline.cpp).
#pragma once

#include <string>
#include <vector>

#include "vpipe/memory/strategy.hpp"

namespace vpipe::bench {

struct PipelineBenchOptions {
  std::string input;
  std::string filters = "resize=1280x720,blur=sigma=1.5";
  std::vector<std::string> decoders{"nvdec", "cpu"};
  std::vector<std::string> mems = compared_strategy_names();
  std::vector<std::string> hosts{"pinned", "pageable"};
  std::vector<std::string> downloads{"slot"};  // slot (encoder reads the slot) | copy (A/B)
  int loop = 1;
  std::string preset = "veryfast";
  std::string json_path;
  std::string device = "cuda";  // cpu: one CPU-path row (a smoke run where no GPU is)
};

// Prints a markdown table on stdout; 0 when it ran, 2 when --device cuda has no GPU.
int run_pipeline_bench(const PipelineBenchOptions& options);

}  // namespace vpipe::bench
