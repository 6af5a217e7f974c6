// `vpipe bench chain IN --vf CHAIN…`: each chain's CUDA filters run as a
// stage and launches per filter (--graphs off) and as one CUDA Graph per frame
// (--graphs on), side by side in one run, with 1…N streams sharing the GPU:
// steady fps and the CUDA stages' time in process() per frame.
#pragma once

#include <string>
#include <vector>

namespace vpipe::bench {

struct ChainBenchOptions {
  std::string input;
  std::vector<std::string> chains{"resize=1280x720,blur=sigma=1.5,eq=contrast=1.1",
                                  "resize=1280x720,blur=sigma=1.5,eq=contrast=1.1,unsharp,flip=h,"
                                  "invert"};
  std::vector<int> streams{1, 8};
  std::string decode = "nvdec";
  std::string mem = "pool";
  int loop = 1;
  int repeat = 1;  // each row this many times, the modes alternating
  std::string json_path;
};

// Markdown on stdout; 0 when it ran, 1 without a CUDA device.
int run_chain_bench(const ChainBenchOptions& options);

}  // namespace vpipe::bench
