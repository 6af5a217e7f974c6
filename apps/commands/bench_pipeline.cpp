// vpipe bench pipeline: transcode throughput per decoder × strategy × staging.
#include "bench/bench_pipeline.hpp"
#include "commands/bench.hpp"
#include "vpipe/memory/strategy.hpp"

namespace vpipe::cli {
namespace {

class BenchPipelineCommand final : public BenchCommand<bench::PipelineBenchOptions> {
 public:
  CLI::App* add(CLI::App& bench) override {
    app_ = bench.add_subcommand(
        "pipeline",
        "transcode throughput per decoder × --mem × --host: decode-only, no-encoder, "
        "end-to-end, and libx264 encode-only (markdown table on stdout)");
    app_->add_option("input", o_.input, "input video (e.g. 1080p H.264)")->required();
    add_schema_option(app_, "vf", o_.filters, "filter chain");
    add_schema_option(app_, "decode", o_.decoders, "decoders to compare", {"cpu", "nvdec"})
        ->delimiter(',');
    add_schema_option(app_, "mem", o_.mems, "memory strategies to compare")->delimiter(',');
    add_schema_option(app_, "host", o_.hosts, "host staging modes to compare")->delimiter(',');
    app_->add_option("--download", o_.downloads,
                     "slot: the encoder reads the download's staging slot; copy: the slot is "
                     "copied into a fresh frame first (A/B)")
        ->check(CLI::IsMember({"slot", "copy"}))
        ->delimiter(',');
    add_schema_option(app_, "loop", o_.loop, "read the input N times over per run");
    add_schema_option(app_, "preset", o_.preset, "libx264 preset");
    app_->add_option("--json", o_.json_path, "write every run's report as JSON");
    add_quick(app_, quick_);
    add_schema_option(app_, "device", o_.device, "cuda, or cpu for one CPU-path row",
                      {"cpu", "cuda"});
    return app_;
  }
  void finish() override {
    if (quick_ && !given(app_, "--host")) o_.hosts = {"pinned"};
  }
  int run() override { return bench::run_pipeline_bench(o_); }
};

}  // namespace

std::unique_ptr<Command> make_bench_pipeline_command() {
  return std::make_unique<BenchPipelineCommand>();
}

}  // namespace vpipe::cli
