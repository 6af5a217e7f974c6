// vpipe soak: a workload run for a long time per memory strategy, sampled,
// plotted and judged (apps/soak/); --rejudge judges a finished one again.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "commands/command.hpp"
#include "commands/common.hpp"
#include "commands/exit_codes.hpp"
#include "soak/metrics_server.hpp"
#include "soak/soak.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"

namespace vpipe::cli {
namespace {

void print_soak_table(const SoakResult& result) {
  fmt::print(
      "| strategy | verdict | frames | mean fps | peak held MB | peak used MB | memory growth | "
      "host RSS growth | p99 drift | probes (max ms) | failures | why |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : result.runs) {
    std::string why;
    for (const auto& reason : r.verdict.reasons) why += (why.empty() ? "" : "; ") + reason;
    for (const auto& note : r.verdict.notes) why += (why.empty() ? "" : "; ") + note;
    const auto pct = [](const std::optional<double>& v) {
      return v ? fmt::format("{:+.1f} %", *v * 100) : std::string("-");
    };
    double held = 0, used = 0,  // over the samples: held from the device, handed out
        probe_max = 0;          // the longest largest-block probe
    int probes = 0;
    for (const auto& s : r.samples) {
      held = std::max(held, s.reserved_mb.value_or(0));
      used = std::max(used, s.used_mb.value_or(0));
      probes += s.probe_ms ? 1 : 0;
      probe_max = std::max(probe_max, s.probe_ms.value_or(0));
    }
    fmt::print(
        "| {} | {} | {} | {:.0f} | {:.1f} | {:.1f} | {} ({}) | {} | {} | {} ({:.1f}) | {} | {} |\n",
        soak_label(r.strategy, r.gpu), r.verdict.pass ? "PASS" : "FAIL", r.frames,
        r.wall_s > 0 ? r.frames / r.wall_s : 0.0, held, used, pct(r.verdict.memory_growth),
        r.verdict.memory_metric, pct(r.verdict.rss_growth), pct(r.verdict.p99_drift), probes,
        probe_max, r.verdict.failures, why);
  }
}

int run_soak(SoakOptions& o, const MetricsEndpoint& metrics) {
  if (!o.out_dir.empty()) check_writable_dir(o.out_dir, "--out");  // not after a 2-hour run
  o.interrupt = &stop_signal();
  install_stop_signals();
  std::mutex mu;
  std::map<std::string, SoakSample> latest;
  std::unique_ptr<MetricsServer> server;
  if (metrics.port > 0) {
    server = std::make_unique<MetricsServer>(metrics.address, metrics.port, [&] {
      std::lock_guard lock(mu);
      std::vector<SoakSample> v;
      for (const auto& [k, s] : latest) v.push_back(s);
      return prometheus_text(v);
    });
    fmt::print(stderr, "vpipe soak: metrics at http://{}:{}/metrics\n", metrics.address,
               server->port());
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto result = vpipe::run_soak(o, [&](const SoakSample& s) {
    {
      std::lock_guard lock(mu);
      latest[soak_label(s.strategy, s.gpu)] = s;
    }
    const std::string mem = s.reserved_mb ? fmt::format("reserved {:.0f} MB", *s.reserved_mb)
                                          : fmt::format("RSS {:.0f} MB", s.rss_mb);
    const std::string line =
        fmt::format("[{}] {:.0f} s  {} frames  {:.0f} fps  p99 {:.2f} ms  {}  {}x{}{}",
                    soak_label(s.strategy, s.gpu), s.t_s, s.frames, s.fps, s.p99_ms, mem, s.width,
                    s.height, s.failures ? fmt::format("  {} FAILURES", s.failures) : "");
    if (tty) fmt::print(stderr, "\r{:<100}", line);
  });
  if (tty) fmt::print(stderr, "\n");
  write_soak_outputs(result, o);
  print_soak_table(result);
  if (!o.out_dir.empty()) fmt::print(stderr, "vpipe soak: report in {}/report.html\n", o.out_dir);
  if (stop_signal().load()) return signal_exit_status();
  return result.pass() ? kDone : kVerdictFailed;
}

class SoakCommand final : public Command {
 public:
  CLI::App* add(CLI::App& parent) override;
  void finish() override;
  int run() override;

 private:
  void add_verdict_options(CLI::App* soak);

  CLI::App* app_ = nullptr;
  SoakOptions o_;
  std::vector<std::string> compare_;
  std::string mem_ = "pool", duration_, budget_, gpus_, size_ = "1920x1080", rejudge_,
              probe_max_ = "1G";
  std::int64_t frames_ = 0;
  double max_growth_pct_ = 10, max_drift_pct_ = 50, warmup_pct_ = 20, max_rss_growth_pct_ = 10;
  MetricsEndpoint metrics_;
};

CLI::App* SoakCommand::add(CLI::App& parent) {
  auto* soak = app_ = parent.add_subcommand(
      "soak",
      "run a workload for a long time per memory strategy, sampling fps, latency, device "
      "memory, fragmentation, failures; CSV/JSON/PNG/HTML out; non-zero exit (3) when "
      "memory grows, latency drifts or an allocation fails");
  add_schema_option(soak, "mem", mem_, "the strategy to soak");
  const auto strategy = schema_flag("mem");  // each of --compare's is a --mem
  soak->add_option("--compare", compare_,
                   fmt::format("several strategies, one after the other, same workload and seed: "
                               "e.g. {}",
                               fmt::join(compared_strategy_names(), ",")))
      ->check(strategy.check)
      ->delimiter(',')
      ->type_name(strategy.value + ",…");
  add_schema_option(
      soak, "gpus", gpus_,
      "run every strategy on each of these GPUs, the GPUs at once (all, a count, or a "
      "list such as 0,1); each run has its own strategy and budget on its GPU, and "
      "is named STRATEGY@gpuN in the outputs");
  soak->add_flag("--parallel", o_.parallel,
                 "run the --compare strategies at the same time, sharing the GPU (tenants of one "
                 "device), instead of one after the other");
  soak->add_option("--workload", o_.workload,
                   "constant | ladder (1, 3/4, 1/2, 1/3 of --size, switching every --ladder-every "
                   "frames) | roi (random regions) | burst (extra frames held in spikes)")
      ->check(CLI::IsMember({"constant", "ladder", "roi", "burst"}))
      ->capture_default_str();
  soak->add_option("--duration", duration_, "per strategy: seconds, or with a unit: 90s, 20m, 2h");
  add_schema_option(soak, "frames", frames_, "per strategy: stop after N frames (default: none)")
      ->default_str("");
  soak->add_option("--interval", o_.interval_s, "seconds between samples")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  soak->add_option("--probe-interval", o_.probe_interval_s,
                   "seconds between largest-block probes of the device (0: never); each probe's "
                   "time is in the samples (probe_ms) and left out of the frames' latency")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  soak->add_option("--probe-max", probe_max_,
                   "the probe's search ceiling without --budget, e.g. 1G, 4G: a search up to a "
                   "big GPU's free memory stalls every stream for seconds")
      ->capture_default_str();
  add_schema_option(soak, "budget", budget_,
                    "device memory cap per strategy, e.g. 1.5G, 800M (emulates a shared GPU)");
  soak->add_option("--size", size_, "source frame size WxH (the ladder's top rung)")
      ->capture_default_str();
  add_schema_option(soak, "vf", o_.filters, "filter chain");
  add_schema_option(soak, "device", o_.device, "cuda, cpu or auto");
  add_schema_option(soak, "host", o_.host, "download staging: pinned or pageable");
  soak->add_option("--ladder-every", o_.ladder_every, "ladder: frames per rung")
      ->check(positive_count())
      ->capture_default_str();
  soak->add_option("--fps", o_.fps, "pace the source (0: full speed)")->capture_default_str();
  soak->add_option("--seed", o_.seed, "random seed (roi workload)")->capture_default_str();
  soak->add_option("--rejudge_", rejudge_,
                   "judge a finished soak's soak.json again with these --max-growth, --max-drift "
                   "and --warmup (runs nothing)");
  soak->add_option("--out", o_.out_dir, "write samples.csv, soak.json, *.png and report.html here");
  add_metrics_options(soak, metrics_);
  add_verdict_options(soak);
  return soak;
}

// The verdict's thresholds.
void SoakCommand::add_verdict_options(CLI::App* soak) {
  soak->add_option("--max-growth", max_growth_pct_,
                   "verdict: % growth of reserved device memory (CPU: RSS) after warm-up")
      ->capture_default_str();
  soak->add_option("--max-drift", max_drift_pct_,
                   "verdict: % rise of p99 latency, last third vs first third after warm-up")
      ->capture_default_str();
  soak->add_option("--max-rss-growth", max_rss_growth_pct_,
                   "verdict: % growth of the host's RSS after warm-up (device runs; a host leak "
                   "fails like a device one)")
      ->capture_default_str();
  soak->add_option("--warmup", warmup_pct_, "verdict: % of the samples ignored at the start")
      ->check(CLI::Range(0.0, 90.0))
      ->capture_default_str();
}

void SoakCommand::finish() {
  o_.strategies = compare_.empty() ? std::vector<std::string>{mem_} : compare_;
  if (!duration_.empty()) o_.duration_s = parse_duration(duration_, "--duration");
  if (frames_ > 0) o_.frames = frames_;
  if (!budget_.empty()) o_.budget = parse_bytes(budget_, "--budget");
  if (!gpus_.empty()) o_.gpus = gpus_of(gpus_);
  parse_size(size_, "--size", o_.width, o_.height);
  o_.probe_max = parse_bytes(probe_max_, "--probe-max");
  o_.thresholds = {warmup_pct_ / 100, max_growth_pct_ / 100, max_drift_pct_ / 100,
                   max_rss_growth_pct_ / 100};
}

int SoakCommand::run() {
  if (rejudge_.empty()) return run_soak(o_, metrics_);
  auto r = read_soak_json(rejudge_);
  for (auto& each : r.runs) {
    each.verdict = judge(each.samples, o_.thresholds);
    if (!each.error.empty()) each.verdict.pass = false;
  }
  print_soak_table(r);
  return r.pass() ? kDone : kVerdictFailed;
}

}  // namespace

std::unique_ptr<Command> make_soak_command() { return std::make_unique<SoakCommand>(); }

}  // namespace vpipe::cli
