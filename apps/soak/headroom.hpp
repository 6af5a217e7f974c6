// vpipe bench headroom: the smallest budget under which each memory strategy
// runs a soak workload with no failed allocation, found by bisection and given
// as a multiple of the workload's live set (issue #25's headroom table).
//
// The live set is the most bytes any strategy had handed out at once in an
// unbudgeted run of the same workload (all strategies at once, sharing the GPU).
// Each probe is a soak of `probe_s` seconds under one budget; a probe passes when
// no allocation failed after the retry layer (trim, retry) and the run did not
// end early. Strategies are bisected at the same time, each in its own thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "soak/soak.hpp"
#include "vpipe/memory/strategy.hpp"

namespace vpipe {

struct HeadroomOptions {
  SoakOptions
      soak;  // filters, size, queue depth; its workload, budget and duration are set per probe
  std::vector<std::string> workloads{"constant", "ladder", "roi", "burst"};
  std::vector<std::string> strategies = compared_strategy_names();
  double probe_s = 8;            // each soak probe
  double low = 1.0, high = 3.0;  // the search range, multiples of the live set
  int steps = 4;                 // bisection steps after the two ends
  std::string json_path;
};

struct BisectProbe {
  double multiple = 0;
  bool pass = false;
};

struct BisectResult {
  // The smallest multiple seen to pass (within (high-low)/2^steps of the true
  // edge); nullopt when even `high` failed.
  std::optional<double> multiple;
  std::vector<BisectProbe> probes;  // in the order they ran
};

// Pure: `passes(m)` runs a probe at multiple m. Tries `high` (fails: no answer),
// then `low` (passes: the answer), then halves the bracket `steps` times.
[[nodiscard]] BisectResult bisect_headroom(double low, double high, int steps,
                                           const std::function<bool(double)>& passes);

// Runs the table on the GPU: markdown on stdout, JSON to o.json_path. Returns
// the exit code (1 without a CUDA device).
int run_headroom(const HeadroomOptions& o);

}  // namespace vpipe
