// vpipe bench mem: the memory strategies measured (needs a CUDA device).
#include "bench/bench_mem.hpp"
#include "commands/bench.hpp"

namespace vpipe::cli {
namespace {

class BenchMemCommand final : public BenchCommand<bench::MemBenchOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand(
        "mem",
        "memory strategies: allocation latency, per-frame loop, pool release threshold, "
        "staging bandwidth, fragmentation under a budget (markdown tables on stdout)");
    app_->add_flag("--quick", o_.quick, "fewer iterations: a smoke run, not for results");
    app_->add_option("--budget-gib", o_.budget_gib, "device budget of the fragmentation scenarios")
        ->check(CLI::Range(0.25, 64.0))
        ->capture_default_str();
    app_->add_option("--json", o_.json_path, "write every figure as JSON");
    app_->add_option("--log", o_.log_path, "write scenario (a)'s allocation log (CSV)");
    app_->add_option("--only", o_.only, "one section")
        ->check(CLI::IsMember(
            {"latency", "frames", "threshold", "staging", "fragmentation", "contention"}));
    return app_;
  }
  int run() override { return bench::run_mem_bench(o_); }
};

}  // namespace

std::unique_ptr<Command> make_bench_mem_command() { return std::make_unique<BenchMemCommand>(); }

}  // namespace vpipe::cli
