// vpipe bench headroom: the smallest budget each strategy runs each soak workload under.
#include <fmt/format.h>

#include "commands/bench.hpp"
#include "soak/headroom.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"

namespace vpipe::cli {
namespace {

class BenchHeadroomCommand final : public BenchCommand<HeadroomOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand(
        "headroom",
        "the smallest budget each memory strategy runs each soak workload under with no "
        "failed allocation (bisection), as a multiple of the workload's live set");
    app_->add_option("--workload", o_.workloads, "workloads to measure")
        ->check(CLI::IsMember({"constant", "ladder", "roi", "burst"}))
        ->delimiter(',')
        ->capture_default_str();
    add_schema_option(app_, "mem", o_.strategies, "strategies to measure")->delimiter(',');
    app_->add_option("--probe", probe_, "each probe's soak: seconds, or with a unit (90s, 5m)")
        ->capture_default_str();
    app_->add_option("--low", o_.low, "the search range's low end, × the live set")
        ->check(CLI::Range(0.1, 100.0))
        ->capture_default_str();
    app_->add_option("--high", o_.high, "the search range's high end, × the live set")
        ->check(CLI::Range(0.1, 100.0))
        ->capture_default_str();
    app_->add_option("--steps", o_.steps, "bisection steps between the ends")
        ->check(CLI::Range(0, 20))
        ->capture_default_str();
    add_schema_option(app_, "vf", o_.soak.filters, "filter chain of the soak");
    app_->add_option("--size", size_, "source frame size WxH")->capture_default_str();
    app_->add_option("--json", o_.json_path, "write every probe as JSON");
    add_quick(app_, quick_);
    return app_;
  }
  void finish() override {
    if (quick_) {
      if (!given(app_, "--workload")) o_.workloads = {"constant"};
      if (!given(app_, "--probe")) probe_ = "1s";
      if (!given(app_, "--steps")) o_.steps = 0;
    }
    o_.probe_s = parse_duration(probe_, "--probe");
    if (o_.low >= o_.high)
      throw usage_error(fmt::format("--low {} must be below --high {}", o_.low, o_.high));
    parse_size(size_, "--size", o_.soak.width, o_.soak.height);
  }
  int run() override { return run_headroom(o_); }

 private:
  std::string probe_ = "8s", size_ = "1920x1080";
};

}  // namespace

std::unique_ptr<Command> make_bench_headroom_command() {
  return std::make_unique<BenchHeadroomCommand>();
}

}  // namespace vpipe::cli
