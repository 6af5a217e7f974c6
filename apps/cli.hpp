// vpipe's command line (see cli.cpp), apart from what the commands do.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_chain.hpp"
#include "bench_decode.hpp"
#include "bench_encode.hpp"
#include "bench_kernels.hpp"
#include "bench_mem.hpp"
#include "bench_pipeline.hpp"
#include "soak/headroom.hpp"
#include "soak/soak.hpp"
#include "vpipe/pipeline/transcode.hpp"

namespace vpipe::cli {

struct Cli {
  CLI::App app{
      "vpipe: real-time video pipelines (decode → filters → encode) with measurable "
      "GPU memory strategies"};
  CLI::App *tc = nullptr, *bench = nullptr, *bmem = nullptr, *bkern = nullptr, *breplay = nullptr,
           *bpipe = nullptr, *bdec = nullptr, *bchain = nullptr, *benc = nullptr, *bhead = nullptr,
           *soak = nullptr, *run = nullptr;
  bool verbose = false;
  std::vector<std::string> plugins;
  vpipe::TranscodeOptions topts;
  std::map<std::string, std::vector<std::string>> tc_given;  // schema key → the values given
  std::string report_path;
  vpipe::bench::MemBenchOptions mopts;
  bench::KernelBenchOptions kopts;
  std::string replay_log, replay_mem = "all";
  double replay_budget = 0;
  vpipe::bench::PipelineBenchOptions popts;
  vpipe::bench::DecodeBenchOptions dopts;
  vpipe::bench::ChainBenchOptions copts;
  vpipe::bench::EncodeBenchOptions eopts;
  vpipe::HeadroomOptions hopts;
  std::string head_probe = "8s", head_size = "1920x1080";
  vpipe::SoakOptions sopts;
  std::string soak_mem = "pool", soak_compare, soak_duration, soak_budget, soak_gpus,
              soak_size = "1920x1080", rejudge, soak_probe_max = "1G";
  std::int64_t soak_frames = 0;
  bool quick = false;  // --quick of the benches that take an input (apply_quick)
  int metrics_port = 0;
  std::string metrics_address = "127.0.0.1";
  double max_growth_pct = 10, max_drift_pct = 50, warmup_pct = 20, max_rss_growth_pct = 10;
  std::string run_config, run_shard = "0/1", run_gpus_text;
  std::vector<int> run_gpus;  // --gpus of `vpipe run`, parsed
  vpipe::OnGpuError run_on_gpu_error = vpipe::OnGpuError::kFail;
  bool run_check = false;
};

// Every command and option defined; parse with c->app.parse(...).
[[nodiscard]] std::unique_ptr<Cli> make_cli();
// After a successful parse: the values that need converting (durations,
// sizes, byte counts, lists). Throws vpipe::input_error naming the option.
void finish(Cli& c);

[[nodiscard]] std::vector<std::string> split_list(const std::string& s);

}  // namespace vpipe::cli
