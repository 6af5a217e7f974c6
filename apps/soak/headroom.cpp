#include "soak/headroom.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/io/paths.hpp"

namespace vpipe {

BisectResult bisect_headroom(double low, double high, int steps,
                             const std::function<bool(double)>& passes) {
  BisectResult r;
  auto probe = [&](double m) {
    const bool ok = passes(m);
    r.probes.push_back({m, ok});
    return ok;
  };
  if (!probe(high)) return r;
  if (probe(low)) {
    r.multiple = low;
    return r;
  }
  double fail = low, pass = high;
  for (int i = 0; i < steps; ++i) {
    const double mid = (fail + pass) / 2;
    (probe(mid) ? pass : fail) = mid;
  }
  r.multiple = pass;
  return r;
}

namespace {

using nlohmann::json;

struct ProbeRun {
  bool pass = false;
  std::int64_t frames = 0, failures = 0, peak_used = 0;
  double peak_reserved_mb = 0;
  std::string error;
};

SoakOptions probe_options(const HeadroomOptions& o, const std::string& workload,
                          std::vector<std::string> strategies, std::optional<std::size_t> budget) {
  SoakOptions s = o.soak;
  s.device = "cuda";
  s.workload = workload;
  s.strategies = std::move(strategies);
  s.parallel = true;
  s.duration_s = o.probe_s;
  s.frames.reset();
  s.budget = budget;
  s.probe_interval_s = 0;
  s.interval_s = std::min(1.0, o.probe_s / 8);
  s.out_dir.clear();
  return s;
}

ProbeRun summarize(const SoakRun& run) {
  ProbeRun p;
  p.frames = run.frames;
  p.failures = run.verdict.failures;
  p.peak_used = run.peak_used_bytes;
  for (const auto& s : run.samples)
    p.peak_reserved_mb = std::max(p.peak_reserved_mb, s.reserved_mb.value_or(0));
  p.error = run.error;
  p.pass = run.error.empty() && run.verdict.failures == 0;
  return p;
}

json probe_json(double multiple, std::size_t budget, const ProbeRun& p) {
  return {{"multiple", multiple},
          {"budget_bytes", budget},
          {"pass", p.pass},
          {"frames", p.frames},
          {"failures", p.failures},
          {"peak_used_bytes", p.peak_used},
          {"peak_reserved_mb", p.peak_reserved_mb},
          {"error", p.error}};
}

// The workload's live set: every strategy at once with no budget; the most any
// of them had handed out at once.
std::size_t live_set(const HeadroomOptions& o, const std::string& workload, json& out) {
  const auto r = run_soak(probe_options(o, workload, o.strategies, std::nullopt));
  std::size_t peak = 0;
  for (const auto& run : r.runs) {
    const auto p = summarize(run);
    out[run.strategy] = probe_json(0, 0, p);
    if (!p.pass)
      spdlog::warn("headroom {}: {} failed with no budget: {}", workload, run.strategy, p.error);
    peak = std::max(peak, static_cast<std::size_t>(p.peak_used));
  }
  return peak;
}

// One strategy's bisection: the smallest passing multiple of the live set (none: even
// `high` failed) and every probe, as the JSON records them.
struct Bisection {
  std::optional<double> multiple;
  json probes;
};

void to_json(json& j, const Bisection& b) {
  j = {{"multiple", b.multiple ? json(*b.multiple) : json()}, {"probes", b.probes}};
}

// One strategy's bisection (runs on its own thread).
Bisection bisect_strategy(const HeadroomOptions& o, const std::string& workload,
                          const std::string& strategy, std::size_t live) {
  json probes = json::array();
  const auto result = bisect_headroom(o.low, o.high, o.steps, [&](double m) {
    const auto budget = static_cast<std::size_t>(m * static_cast<double>(live));
    const auto r = run_soak(probe_options(o, workload, {strategy}, budget));
    const auto p = summarize(r.runs.at(0));
    spdlog::info("headroom {} {}: {:.3f}x ({:.1f} MB) {} ({} frames{})", workload, strategy, m,
                 static_cast<double>(budget) / 1e6, p.pass ? "pass" : "FAIL", p.frames,
                 p.error.empty() ? "" : ": " + p.error);
    probes.push_back(probe_json(m, budget, p));
    return p.pass;
  });
  return {result.multiple, probes};
}

std::string cell(const Bisection& b, double high) {
  return b.multiple ? fmt::format("{:.2f}×", *b.multiple) : fmt::format("> {:.2f}×", high);
}

}  // namespace

int run_headroom(const HeadroomOptions& o) {
  if (auto reason = cuda_unavailable_reason(); !reason.empty()) {
    fmt::print(stderr, "vpipe bench headroom: {}: nothing to measure\n", reason);
    return 1;
  }
  json out{{"probe_s", o.probe_s},
           {"low", o.low},
           {"high", o.high},
           {"steps", o.steps},
           {"filters", o.soak.filters},
           {"width", o.soak.width},
           {"height", o.soak.height},
           {"device", query_cuda_system().devices.at(0).name},
           {"workloads", json::array()}};
  fmt::print("| workload | live set MB |");
  for (const auto& s : o.strategies) fmt::print(" {} |", s);
  fmt::print("\n|---|---|");
  for (std::size_t i = 0; i < o.strategies.size(); ++i) fmt::print("---|");
  fmt::print("\n");
  for (const auto& workload : o.workloads) {
    json w{{"workload", workload}, {"unbudgeted", json::object()}};
    const std::size_t live = live_set(o, workload, w["unbudgeted"]);
    w["live_peak_bytes"] = live;
    std::vector<Bisection> results(o.strategies.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < o.strategies.size(); ++i)
      threads.emplace_back(
          [&, i] { results[i] = bisect_strategy(o, workload, o.strategies[i], live); });
    for (auto& t : threads) t.join();
    fmt::print("| {} | {:.1f} |", workload, static_cast<double>(live) / 1e6);
    for (std::size_t i = 0; i < o.strategies.size(); ++i) {
      w["strategies"][o.strategies[i]] = results[i];
      fmt::print(" {} |", cell(results[i], o.high));
    }
    fmt::print("\n");
    std::fflush(stdout);
    out["workloads"].push_back(w);
    if (!o.json_path.empty())
      vpipe::write_file(o.json_path, out.dump(1) + '\n', "the JSON");  // after each workload
  }
  return 0;
}

}  // namespace vpipe
