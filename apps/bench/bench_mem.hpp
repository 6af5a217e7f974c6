// `vpipe bench mem`: the memory strategies measured in one run (see bench_mem.cpp).
#pragma once

#include <string>
#include <vector>

namespace vpipe::bench {

struct MemBenchOptions {
  bool quick = false;       // fewer iterations: a smoke run, not for RESULTS
  double budget_gib = 1.5;  // fragmentation scenarios' device budget
  std::string json_path;    // all figures, machine-readable
  std::string log_path;     // scenario (a)'s allocation log (CSV)
  std::string only;  // run one section: latency|frames|threshold|staging|fragmentation|contention
};

// Replays an allocation log (LoggingAdaptor's CSV) against strategies
// (`all` or one name) under an optional budget; prints a table. 0, or 2
// without a CUDA device.
int run_replay(const std::string& log_path, const std::vector<std::string>& strategies,
               double budget_gib);

// Prints markdown tables to stdout. Returns 0, or 1 when a stated target is
// missed (the tables say which), 2 when no CUDA device exists.
int run_mem_bench(const MemBenchOptions& options);

}  // namespace vpipe::bench
