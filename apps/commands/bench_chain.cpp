// vpipe bench chain: CUDA filter chains, launches per filter against one CUDA Graph.
#include "bench/bench_chain.hpp"
#include "commands/bench.hpp"
#include "vpipe/memory/strategy.hpp"

namespace vpipe::cli {
namespace {

class BenchChainCommand final : public BenchCommand<bench::ChainBenchOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand(
        "chain",
        "each filter chain's CUDA filters as a stage and launches per filter (--graphs off) "
        "against one CUDA Graph per frame (--graphs on), side by side, with 1…N streams "
        "sharing the GPU: steady fps, the CUDA stages' µs in process() and GPU µs per frame, and "
        "the busiest stage (markdown on stdout)");
    app_->add_option("input", o_.input, "input video")->required();
    add_schema_option(app_, "vf", o_.chains, "a chain to measure (repeatable)");
    add_schema_option(app_, "streams", o_.streams, "streams sharing the GPU")->delimiter(',');
    add_schema_option(app_, "decode", o_.decode, "nvdec or cpu", {"cpu", "nvdec"});
    add_schema_option(app_, "mem", o_.mem, "memory strategy");
    add_schema_option(app_, "loop", o_.loop, "read the input N times over per run");
    app_->add_option("--repeat", o_.repeat, "each row N times, the modes alternating")
        ->check(CLI::Range(1, 100))
        ->capture_default_str();
    app_->add_option("--json", o_.json_path, "write every row as JSON");
    add_quick(app_, quick_);
    return app_;
  }
  void finish() override {
    if (quick_ && !given(app_, "--streams")) o_.streams = {1};
  }
  int run() override { return bench::run_chain_bench(o_); }
};

}  // namespace

std::unique_ptr<Command> make_bench_chain_command() {
  return std::make_unique<BenchChainCommand>();
}

}  // namespace vpipe::cli
