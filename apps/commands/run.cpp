// vpipe run CONFIG: many feeds from one config file, each supervised and
// restarted by its own policy; SIGHUP re-reads the file, SIGTERM drains all.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include "commands/command.hpp"
#include "commands/common.hpp"
#include "commands/exit_codes.hpp"
#include "run/fleet.hpp"
#include "soak/metrics_server.hpp"
#include "transcode_metrics.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/session/live_stats.hpp"

namespace vpipe::cli {
namespace {

std::atomic<int> g_reload{0};
extern "C" void on_reload(int) { g_reload.store(1); }

// The config's streams for this shard (with --on-gpu-error for each).
std::vector<StreamSpec> fleet_streams(const std::string& config, std::pair<int, int> shard,
                                      OnGpuError on_gpu_error, const std::string& report) {
  auto c = load_fleet_config(config);
  check_fleet_paths(c, report);
  for (auto& s : c.streams) s.options.on_gpu_error = on_gpu_error;
  std::vector<std::string> names;
  for (const auto& s : c.streams) names.push_back(s.name);
  const auto mine = shard_streams(names, shard.first, shard.second);
  std::vector<StreamSpec> out;
  for (auto& s : c.streams)
    if (std::find(mine.begin(), mine.end(), s.name) != mine.end()) out.push_back(std::move(s));
  return out;
}

// --gpus: each listed GPU's load to start from, its free memory as its budget.
std::vector<GpuLoad> gpu_loads(const std::vector<int>& gpus) {
  std::vector<GpuLoad> loads;
  int current = 0;
  if (!gpus.empty()) VPIPE_CUDA_TRY(cudaGetDevice(&current));
  for (const int d : gpus) {
    VPIPE_CUDA_TRY(cudaSetDevice(d));
    std::size_t free = 0, total = 0;
    VPIPE_CUDA_TRY(cudaMemGetInfo(&free, &total));
    loads.push_back({d, 0, 1, 0, free, 0});
  }
  if (!gpus.empty()) VPIPE_CUDA_TRY(cudaSetDevice(current));
  return loads;
}

class RunCommand final : public Command {
 public:
  CLI::App* add(CLI::App& parent) override;
  void finish() override {
    if (!gpus_text_.empty()) gpus_ = gpus_of(gpus_text_);
  }
  int run() override;

 private:
  std::vector<StreamSpec> streams(std::pair<int, int> shard) const {
    return fleet_streams(config_, shard, on_gpu_error_, report_path_);
  }
  int supervise(const std::pair<int, int>& shard, std::vector<StreamSpec> streams);

  std::string config_, shard_ = "0/1", report_path_, gpus_text_;
  std::vector<int> gpus_;  // --gpus, parsed
  OnGpuError on_gpu_error_ = OnGpuError::kFail;
  bool check_ = false;
  MetricsEndpoint metrics_;
};

CLI::App* RunCommand::add(CLI::App& parent) {
  auto* run = parent.add_subcommand(
      "run",
      "run many feeds from one config file (YAML or JSON), each restarted by its own policy; "
      "SIGHUP re-reads the file: streams added start, removed stop (outputs finalized), changed "
      "restart; SIGTERM drains all");
  run->footer(
      "CONFIG:\n"
      "  defaults: {vf: \"resize=1280x720\", mem: pool}\n"
      "  streams:\n"
      "    - name: cam1\n"
      "      input: udp://0.0.0.0:5000\n"
      "      output: /data/cam1.ts\n"
      "      restart: {max: 10, backoff_s: 1, backoff_max_s: 30}\n"
      "Keys per stream: name, restart, restart_on_end (default: live inputs), skip_done, and\n"
      "every transcode option but streams, gpus and on_gpu_error ('vpipe options' lists them).\n"
      "A restarted live feed writes OUT-restartN.ext (a restart never replaces a finalized "
      "output).");
  run->add_option("config", config_, "the config file")->required()->check(CLI::ExistingFile);
  run->add_option("--shard", shard_,
                  "run shard INDEX of COUNT: the streams sorted by name, dealt round-robin (a "
                  "StatefulSet's pod ordinal, an Indexed Job's completion index)")
      ->capture_default_str();
  run->add_option("--report", report_path_,
                  "write every stream's state, restarts and run reports as JSON");
  add_schema_option(run, "gpus", gpus_text_,
                    "place each stream on the GPU with the most headroom (all, a count, or a "
                    "list such as 0,1); each stream's session makes its strategy on its GPU");
  add_enum(run, "--on-gpu-error", on_gpu_error_,
           "with --gpus: a stream that fails with a CUDA error restarts on another GPU, that "
           "GPU taking no more streams (move), or by its restart policy where it was (fail)");
  run->add_flag("--check", check_,
                "read and check the config, print this shard's streams, run nothing");
  add_metrics_options(run, metrics_);
  return run;
}

int RunCommand::run() {
  const auto shard = parse_shard(shard_);
  auto specs = streams(shard);
  if (check_) {  // stdout: one line per stream of this shard
    for (const auto& s : specs)
      fmt::print("{}\t{}\t{}\n", s.name, s.options.input, s.options.output);
    return kDone;
  }
  install_stop_signals();
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_reload;
  sigaction(SIGHUP, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return supervise(shard, std::move(specs));
}

int RunCommand::supervise(const std::pair<int, int>& shard, std::vector<StreamSpec> specs) {
  // Members in the order they must die, last first: the endpoint, then the
  // supervisors (their sessions leave the registry; they release their GPUs),
  // then the registry and the GPUs.
  GpuPlacer gpus(gpu_loads(gpus_));
  LiveRegistry live;
  Fleet fleet(&live, &gpus);
  std::unique_ptr<MetricsServer> server;
  if (metrics_.port > 0) {
    server = std::make_unique<MetricsServer>(
        metrics_.address, metrics_.port,
        [&] { return transcode_metrics_text(live.sample()) + fleet.metrics_text(); },
        [&] { return live.ready(); });
    fmt::print(stderr, "vpipe: metrics at http://{}:{}/metrics (/healthz, /readyz)\n",
               metrics_.address, server->port());
  }
  fmt::print(stderr, "vpipe run: {} stream(s) of {} (shard {}/{})\n", specs.size(), config_,
             shard.first, shard.second);
  fleet.apply(specs);
  bool stopping = false;
  while (!fleet.all_finished()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (stop_signal().load() && !std::exchange(stopping, true)) fleet.stop_all();
    if (g_reload.exchange(0) && !stopping) {
      try {
        specs = streams(shard);
        fleet.apply(specs);
        fmt::print(stderr, "vpipe run: {} re-read: {} stream(s)\n", config_, specs.size());
      } catch (const input_error& e) {
        fmt::print(stderr, "vpipe run: config not re-read, the streams go on: {}\n", e.what());
      }
    }
  }
  const auto status = fleet.status();
  write_json(report_path_, {{"config", config_}, {"shard", shard_}, {"streams", status}});
  int rc = kDone;
  for (const auto& s : status) {
    fmt::print(stderr, "vpipe run: {}: {}, {} restart(s){}\n", s.name, s.state, s.restarts,
               s.last_error.empty() ? "" : "; last error: " + s.last_error);
    if (s.state == "gave up") rc = kFailed;
  }
  return stop_signal().load() ? signal_exit_status() : rc;
}

}  // namespace

std::unique_ptr<Command> make_run_command() { return std::make_unique<RunCommand>(); }

}  // namespace vpipe::cli
