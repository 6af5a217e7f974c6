// vpipe bench replay LOG: an allocation log (bench mem --log) replayed against strategies.
#include "bench/bench_mem.hpp"
#include "commands/bench.hpp"
#include "vpipe/memory/strategy.hpp"

namespace vpipe::cli {
namespace {

struct ReplayOptions {
  std::string log;
  std::vector<std::string> mem = compared_strategy_names();
  double budget_gib = 0;
};

class BenchReplayCommand final : public BenchCommand<ReplayOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand(
        "replay", "replay an allocation log (from bench mem --log) against memory strategies");
    app_->add_option("log", o_.log, "the CSV log")->required()->check(CLI::ExistingFile);
    add_schema_option(app_, "mem", o_.mem, "the strategies to replay against")->delimiter(',');
    app_->add_option("--budget-gib", o_.budget_gib, "device budget (0: none)");
    return app_;
  }
  int run() override { return bench::run_replay(o_.log, o_.mem, o_.budget_gib); }
};

}  // namespace

std::unique_ptr<Command> make_bench_replay_command() {
  return std::make_unique<BenchReplayCommand>();
}

}  // namespace vpipe::cli
