// vpipe bench kernels: the CUDA filter kernels against a device copy.
#include "bench/bench_kernels.hpp"
#include "commands/bench.hpp"

namespace vpipe::cli {
namespace {

class BenchKernelsCommand final : public BenchCommand<bench::KernelBenchOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand("kernels",
                                "CUDA filter kernels: µs and GB/s vs a device copy, 1080p and 4K "
                                "(exit 1 when a kernel misses its bandwidth goal)");
    app_->add_flag("--quick", o_.quick, "fewer runs");
    app_->add_flag("--once", o_.once,
                   "run each kernel once, without warm-up: for a profiler, e.g. "
                   "ncu -k regex:sobel vpipe bench kernels --once");
    app_->add_option("--json", o_.json_path, "write every figure as JSON");
    return app_;
  }
  int run() override { return bench::run_kernel_bench(o_); }
};

}  // namespace

std::unique_ptr<Command> make_bench_kernels_command() {
  return std::make_unique<BenchKernelsCommand>();
}

}  // namespace vpipe::cli
