// vpipe: the command-line front of the framework.
//
//   vpipe transcode IN OUT [--vf CHAIN] [--device cpu|cuda|auto] [--decode cpu|nvdec|auto]
//                          [--mem STRATEGY] [--host pinned|pageable] [--encoder NAME]
//                          [--crf N] [--preset P] [--frames N] [--loop N] [--report FILE.json]
//                          (OUT "null": write nothing, measure decode + filters)
//   vpipe info             CUDA devices, NVDEC/NVENC through FFmpeg, library versions
//   vpipe filters          the filters --vf takes, with their parameters
//   vpipe bench mem        the memory strategies measured (needs a CUDA device)
//   vpipe bench kernels    the CUDA filter kernels' throughput vs a device copy
//   vpipe bench pipeline IN transcode throughput per decoder × strategy × staging
//   vpipe bench replay LOG replay an allocation log against the strategies
//
// transcode's data flow (each box a thread, each arrow a bounded queue):
//
//   demux ─► decode ─► [upload ─► CUDA filter … ─► download] ─► encode ─► mux ─► OUT
//     └─────── audio, subtitles: copied ─────────────────────────────────┘
//   (the CPU path runs the filters on the CPU instead of the bracketed part;
//    with NVDEC, decode hands device frames to the first CUDA filter: no upload)
//
// Exit status: 0 done, 1 error (one line on stderr naming the file and the
// cause; no partial output left), 2 usage, 3 soak verdict failed, 4 completed
// with N errors (damaged input: frames concealed or dropped, counted; the
// output is complete), 130/143 interrupted by SIGINT/SIGTERM (the output is
// finalized and playable).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>

extern "C" {
#include <libavcodec/version.h>
#include <libavformat/version.h>
#include <libavutil/log.h>
}
#include <opencv2/core/version.hpp>

#include "bench_kernels.hpp"
#include "bench_mem.hpp"
#include "bench_pipeline.hpp"
#include "vpipe/pipeline/metrics_server.hpp"
#include "vpipe/pipeline/soak.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/filter.hpp"
#include "vpipe/pipeline/hw_probe.hpp"
#include "vpipe/pipeline/transcode.hpp"

namespace {

std::atomic<int> g_signal{0};
extern "C" void on_signal(int sig) {
  if (g_signal.load() != 0) std::_Exit(128 + sig);  // second press: leave now
  g_signal.store(sig);
}

std::string format_eta(double s) {
  if (s < 0 || s > 360000) return "--";
  const int t = static_cast<int>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

int run_transcode(vpipe::TranscodeOptions& opts, const std::string& report_path) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (tty) {
    opts.on_progress = [](const vpipe::TranscodeProgress& p) {
      const double fps = p.elapsed_s > 0 ? static_cast<double>(p.frames_done) / p.elapsed_s : 0;
      const std::string total = p.frames_total > 0 ? fmt::format("/{}", p.frames_total) : "";
      const double eta = p.frames_total > 0 && fps > 0
                             ? static_cast<double>(p.frames_total - p.frames_done) / fps
                             : -1;
      fmt::print(stderr, "\rframe {}{}  {:.1f} fps  elapsed {}  eta {}   ", p.frames_done, total,
                 fps, format_eta(p.elapsed_s), format_eta(eta));
      std::fflush(stderr);
    };
  }
  opts.interrupt = &g_signal;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // A full disk or a file-size limit, a closed pipe: let the write fail with
  // an error we report, rather than the signal killing us mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);

  const vpipe::TranscodeReport r = vpipe::transcode(opts);
  if (tty) fmt::print(stderr, "\n");
  for (const auto& note : r.notes) fmt::print(stderr, "vpipe: {}\n", note);
  if (!r.memory.is_null())
    fmt::print(stderr, "vpipe: CUDA path ({} decode), --mem {} --host {}: {} allocations, peak {:.1f} MB, "
                       "allocate p50 {:.2f} µs, {} device syncs, {} failures\n",
               r.decode, r.memory["strategy"].get<std::string>(), r.memory["host_staging"].get<std::string>(),
               r.memory["allocations"].get<std::int64_t>(),
               static_cast<double>(r.memory["bytes_peak"].get<std::int64_t>()) / 1e6,
               r.memory["allocate_us"]["p50"].get<double>(), r.memory["device_syncs"].get<std::int64_t>(),
               r.memory["failures"].get<std::int64_t>());
  fmt::print(stderr, "vpipe: {} → {}: {} frames {}x{} in {:.2f} s ({:.1f} fps), latency p50 {:.1f} ms p99 {:.1f} ms{}{}\n",
             r.input, r.output, r.video_packets_written, r.output_format.width,
             r.output_format.height, r.wall_s, r.fps, r.latency_ms_p50, r.latency_ms_p99,
             r.decode_errors ? fmt::format(", completed with {} errors", r.decode_errors) : "",
             r.interrupted ? " (interrupted: output finalized)" : "");
  if (!report_path.empty()) {
    std::ofstream f(report_path);
    f << r.to_json().dump(2) << '\n';
    if (!f) throw vpipe::input_error(fmt::format("cannot write report '{}'", report_path));
  }
  if (r.interrupted) return 128 + g_signal.load();
  // The output is complete and playable, but frames were damaged or lost.
  if (r.decode_errors > 0) return 4;
  return 0;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto end = s.find(',', start);
    const auto item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// "90", "90s", "20m", "2h" → seconds.
double parse_duration(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (end == s.c_str() || mult < 0 || v <= 0)
    throw vpipe::input_error(fmt::format("--duration {}: expected seconds or 90s, 20m, 2h", s));
  return v * mult;
}

// "1.5G", "800M", "1048576" → bytes.
std::size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit.empty() ? 1 : unit == "K" ? 1024.0 : unit == "M" ? 1024.0 * 1024
                      : unit == "G" ? 1024.0 * 1024 * 1024 : -1;
  if (end == s.c_str() || mult < 0 || v <= 0)
    throw vpipe::input_error(fmt::format("--budget {}: expected bytes or 800M, 1.5G", s));
  return static_cast<std::size_t>(v * mult);
}

void print_soak_table(const vpipe::SoakResult& result) {
  fmt::print("| strategy | verdict | frames | mean fps | memory growth | p99 drift | failures | why |\n"
             "|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : result.runs) {
    std::string why;
    for (const auto& reason : r.verdict.reasons) why += (why.empty() ? "" : "; ") + reason;
    const auto pct = [](const std::optional<double>& v) { return v ? fmt::format("{:+.1f} %", *v * 100) : std::string("-"); };
    fmt::print("| {} | {} | {} | {:.0f} | {} ({}) | {} | {} | {} |\n", r.strategy,
               r.verdict.pass ? "PASS" : "FAIL", r.frames, r.wall_s > 0 ? r.frames / r.wall_s : 0.0,
               pct(r.verdict.memory_growth), r.verdict.memory_metric, pct(r.verdict.p99_drift),
               r.verdict.failures, why);
  }
}

int run_soak_cli(vpipe::SoakOptions& o, const std::string& metrics_address, int metrics_port) {
  o.interrupt = &g_signal;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::mutex mu;
  std::map<std::string, vpipe::SoakSample> latest;
  std::unique_ptr<vpipe::MetricsServer> server;
  if (metrics_port > 0) {
    server = std::make_unique<vpipe::MetricsServer>(metrics_address, metrics_port, [&] {
      std::lock_guard lock(mu);
      std::vector<vpipe::SoakSample> v;
      for (const auto& [k, s] : latest) v.push_back(s);
      return vpipe::prometheus_text(v);
    });
    fmt::print(stderr, "vpipe soak: metrics at http://{}:{}/metrics\n", metrics_address, server->port());
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto result = vpipe::run_soak(o, [&](const vpipe::SoakSample& s) {
    {
      std::lock_guard lock(mu);
      latest[s.strategy] = s;
    }
    const std::string mem = s.reserved_mb ? fmt::format("reserved {:.0f} MB", *s.reserved_mb)
                                          : fmt::format("RSS {:.0f} MB", s.rss_mb);
    const std::string line = fmt::format("[{}] {:.0f} s  {} frames  {:.0f} fps  p99 {:.2f} ms  {}  {}x{}{}",
                                         s.strategy, s.t_s, s.frames, s.fps, s.p99_ms, mem, s.width, s.height,
                                         s.failures ? fmt::format("  {} FAILURES", s.failures) : "");
    if (tty) fmt::print(stderr, "\r{:<100}", line);
  });
  if (tty) fmt::print(stderr, "\n");
  vpipe::write_soak_outputs(result, o);
  print_soak_table(result);
  if (!o.out_dir.empty()) fmt::print(stderr, "vpipe soak: report in {}/report.html\n", o.out_dir);
  if (g_signal.load()) return 128 + g_signal.load();
  return result.pass() ? 0 : 3;
}

int run_info() {
  const auto cuda = vpipe::query_cuda_system();
  fmt::print("vpipe {}\n", "0.1.0");
  fmt::print("CUDA runtime (built with): {}\n", vpipe::cuda_version_string(cuda.runtime_version));
  fmt::print("CUDA driver: {}\n", cuda.driver_version ? vpipe::cuda_version_string(cuda.driver_version)
                                                      : std::string("none"));
  if (cuda.devices.empty()) {
    fmt::print("CUDA devices: none ({}); vpipe runs the CPU path\n", cuda.unavailable_reason);
  }
  for (const auto& d : cuda.devices) {
    fmt::print("CUDA device {}: {}, compute {}.{}, {} SMs, {:.1f} GiB ({:.1f} GiB free), memory pools: {}\n",
               d.index, d.name, d.cc_major, d.cc_minor, d.multiprocessors,
               static_cast<double>(d.total_memory) / (1 << 30),
               static_cast<double>(d.free_memory) / (1 << 30), d.memory_pools ? "yes" : "no");
  }
  const auto hw = vpipe::probe_hw_codecs();
  fmt::print("FFmpeg CUDA hwaccel: {} ({})\n", hw.cuda_hwdevice ? "yes" : "no", hw.cuda_detail);
  fmt::print("NVDEC through FFmpeg: {} ({})\n", hw.nvdec ? "usable" : "not usable", hw.nvdec_detail);
  fmt::print("NVENC through FFmpeg: {} ({})\n", hw.nvenc ? "usable" : "not usable", hw.nvenc_detail);
  fmt::print("Encoder for transcode: {}\n",
             hw.nvenc ? "h264_nvenc (--encoder auto picks it; --encoder libx264 for x264)"
                      : "libx264 (--encoder auto: no usable NVENC here)");
  fmt::print("Decoder for transcode: {}\n",
             hw.nvdec ? "NVDEC when the chain starts with a CUDA filter (--decode auto)"
                      : "libavcodec on the CPU (NVDEC not usable)");
  fmt::print("FFmpeg: libavformat {}, libavcodec {}\n", AV_STRINGIFY(LIBAVFORMAT_VERSION),
             AV_STRINGIFY(LIBAVCODEC_VERSION));
  fmt::print("OpenCV: {}\n", CV_VERSION);
  return 0;
}

// Plugins: the default directories (or $VPIPE_PLUGIN_DIR; empty: none), then --plugin.
void load_plugins(const std::vector<std::string>& explicit_plugins) {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("VPIPE_PLUGIN_DIR")) {
    vpipe::load_filter_plugins_from(dir);
  } else {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
    if (!ec) {
      vpipe::load_filter_plugins_from((exe / "plugins").string());
      vpipe::load_filter_plugins_from((exe / ".." / "lib" / "vpipe" / "plugins").string());
    }
  }
  for (const auto& p : explicit_plugins) vpipe::load_filter_plugin(p);
}

int run_filters() {
  auto& reg = vpipe::FilterRegistry::instance();
  for (const auto& name : reg.names()) {
    const auto& info = reg.info(name);
    fmt::print("{}\n    {}\n    formats: {}; CUDA: {}{}\n", name, info.summary, info.formats,
               info.cuda ? "yes" : "no (CPU only)", info.in_place ? "; works in place" : "");
    for (const auto& p : info.params) {
      fmt::print("    {:<8} {}{}\n", p.name, p.help,
                 p.default_value.empty() ? " (required)" : fmt::format(" (default {})", p.default_value));
    }
  }
  fmt::print("\nChain syntax: name=value:key=value,next…  e.g. \"resize=1280x720,blur=sigma=1.5\"\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vpipe: real-time video pipelines (decode → filters → encode) with measurable "
               "GPU memory strategies"};
  app.footer(
      "Examples:\n"
      "  vpipe transcode media/sample-720p.mp4 out.mp4 --vf \"resize=640x360,blur=sigma=1.5\"\n"
      "  vpipe transcode in.mp4 out.mp4 --vf \"resize=1280x720,blur=sigma=1.5\" --mem pool --host pinned\n"
      "  vpipe transcode in.mkv out.mkv --encoder ffv1 --report report.json\n"
      "  vpipe transcode in.mp4 null --decode nvdec --vf resize=1280x720 --loop 10   (measure, write nothing)\n"
      "  vpipe bench pipeline in-1080p.mp4 --loop 8\n"
      "  vpipe filters\n"
      "  vpipe info");
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log FFmpeg warnings and debug detail");
  std::vector<std::string> plugins;
  app.add_option("--plugin", plugins,
                 "load a filter plugin (.so built with vpipe_add_filter_plugin; repeatable). "
                 "Plugins in $VPIPE_PLUGIN_DIR, else in <vpipe's dir>/plugins and "
                 "<vpipe's dir>/../lib/vpipe/plugins, load by themselves");

  vpipe::TranscodeOptions topts;
  std::string report_path;
  std::int64_t frames = 0;
  auto* tc = app.add_subcommand("transcode", "decode IN, run the filter chain, encode OUT (audio copied)");
  tc->add_option("input", topts.input, "input file or URL (anything FFmpeg reads)")->required();
  tc->add_option("output", topts.output,
                 "output file; the extension picks the container. null: write nothing (no "
                 "encoder; measures decode and filters)")->required();
  tc->add_option("--vf", topts.filters,
                 "filter chain, e.g. \"resize=1280x720,blur=sigma=1.5\" (see 'vpipe filters')");
  tc->add_option("--device", topts.device,
                 "cpu, cuda or auto (auto: the CUDA path where a CUDA device is usable)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))->capture_default_str();
  tc->add_option("--decode", topts.decode,
                 "cpu (libavcodec threads), nvdec (FFmpeg's cuda hwaccel; frames stay on the "
                 "device) or auto (nvdec when the chain starts with a CUDA filter)")
      ->check(CLI::IsMember({"cpu", "nvdec", "auto"}))->capture_default_str();
  tc->add_option("--mem", topts.mem,
                 "CUDA path: device memory per frame: naive (cudaMalloc/cudaFree), pool "
                 "(cudaMallocAsync pool), pool-release0, vmm (virtual memory arena), slab "
                 "(recycled fixed blocks); see README 'Which memory strategy when'")
      ->check(CLI::IsMember({"naive", "pool", "pool-release0", "vmm", "slab"}))->capture_default_str();
  tc->add_option("--host", topts.host, "CUDA path: host staging: pinned (cudaHostAlloc ring) or pageable")
      ->check(CLI::IsMember({"pinned", "pageable"}))->capture_default_str();
  tc->add_option("--encoder", topts.encoder,
                 "auto (h264_nvenc where the GPU has NVENC, else libx264; the report says "
                 "which and why), libx264, mpeg4, ffv1 (.mkv) or another FFmpeg encoder")
      ->capture_default_str();
  tc->add_option("--crf", topts.crf, "libx264 quality: 0 lossless … 51 worst")
      ->check(CLI::Range(0, 51))->capture_default_str();
  tc->add_option("--preset", topts.preset, "libx264 preset: ultrafast … veryslow")->capture_default_str();
  tc->add_option("--qscale", topts.qscale, "mpeg4 quantizer: 2 best … 31")->check(CLI::Range(2, 31))
      ->capture_default_str();
  tc->add_option("--frames", frames, "stop after N video frames")->check(CLI::PositiveNumber);
  tc->add_option("--loop", topts.loop, "read the input N times over, timestamps continuing")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  tc->add_option("--queue-depth", topts.queue_depth, "frames in flight between two stages")
      ->check(CLI::Range(1, 256))->capture_default_str();
  tc->add_option("--decode-threads", topts.decode_threads, "decoder threads (0: automatic)")
      ->check(CLI::Range(0, 64))->capture_default_str();
  tc->add_option("--report", report_path, "write a JSON report (frames, fps, latency, stages)");
  tc->add_flag("--keep-partial", topts.keep_partial, "keep the output file if the run fails");
  tc->add_flag("--realtime", topts.realtime,
               "read the input no faster than its timestamps (rehearse a live feed with a file)");

  app.add_subcommand("info", "show CUDA devices, NVDEC/NVENC availability and library versions");
  auto* bench = app.add_subcommand("bench", "measure vpipe on this machine (needs a CUDA device)");
  bench->require_subcommand(1);
  vpipe::bench::MemBenchOptions mopts;
  auto* bmem = bench->add_subcommand(
      "mem", "memory strategies: allocation latency, per-frame loop, pool release threshold, "
             "staging bandwidth, fragmentation under a budget (markdown tables on stdout)");
  bmem->add_flag("--quick", mopts.quick, "fewer iterations: a smoke run, not for results");
  bmem->add_option("--budget-gib", mopts.budget_gib, "device budget of the fragmentation scenarios")
      ->check(CLI::Range(0.25, 64.0))->capture_default_str();
  bmem->add_option("--json", mopts.json_path, "write every figure as JSON");
  bmem->add_option("--log", mopts.log_path, "write scenario (a)'s allocation log (CSV)");
  bmem->add_option("--only", mopts.only, "one section")
      ->check(CLI::IsMember({"latency", "frames", "threshold", "staging", "fragmentation"}));
  bool kquick = false;
  std::string kjson;
  auto* bkern = bench->add_subcommand("kernels", "CUDA filter kernels: µs and GB/s vs a device copy, 1080p and 4K");
  bkern->add_flag("--quick", kquick, "fewer runs");
  bkern->add_option("--json", kjson, "write every figure as JSON");
  std::string replay_log, replay_mem = "all";
  double replay_budget = 0;
  auto* breplay = bench->add_subcommand(
      "replay", "replay an allocation log (from bench mem --log) against memory strategies");
  breplay->add_option("log", replay_log, "the CSV log")->required();
  breplay->add_option("--mem", replay_mem, "all, or one of naive, pool, pool-release0, vmm, slab")
      ->capture_default_str();
  breplay->add_option("--budget-gib", replay_budget, "device budget (0: none)");
  vpipe::bench::PipelineBenchOptions popts;
  auto* bpipe = bench->add_subcommand(
      "pipeline", "transcode throughput per decoder × --mem × --host: decode-only, no-encoder, "
                  "end-to-end, and libx264 encode-only (markdown table on stdout)");
  bpipe->add_option("input", popts.input, "input video (e.g. 1080p H.264)")->required();
  bpipe->add_option("--vf", popts.filters, "filter chain")->capture_default_str();
  bpipe->add_option("--decode", popts.decoders, "decoders to compare")
      ->check(CLI::IsMember({"cpu", "nvdec"}))->delimiter(',');
  bpipe->add_option("--mem", popts.mems, "memory strategies to compare")
      ->check(CLI::IsMember({"naive", "pool", "pool-release0", "vmm", "slab"}))->delimiter(',');
  bpipe->add_option("--host", popts.hosts, "host staging modes to compare")
      ->check(CLI::IsMember({"pinned", "pageable"}))->delimiter(',');
  bpipe->add_option("--download", popts.downloads,
                    "slot: the encoder reads the download's staging slot; copy: the slot is "
                    "copied into a fresh frame first (A/B)")
      ->check(CLI::IsMember({"slot", "copy"}))->delimiter(',');
  bpipe->add_option("--loop", popts.loop, "read the input N times over per run")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  bpipe->add_option("--preset", popts.preset, "libx264 preset")->capture_default_str();
  bpipe->add_option("--json", popts.json_path, "write every run's report as JSON");
  bpipe->add_option("--device", popts.device, "cuda, or cpu for one CPU-path row")
      ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  vpipe::SoakOptions sopts;
  std::string soak_mem = "pool", soak_compare, soak_duration, soak_budget;
  std::int64_t soak_frames = 0;
  int metrics_port = 0;
  std::string metrics_address = "127.0.0.1";
  double max_growth_pct = 10, max_drift_pct = 50, warmup_pct = 20;
  auto* soak = app.add_subcommand(
      "soak", "run a workload for a long time per memory strategy, sampling fps, latency, device "
              "memory, fragmentation, failures; CSV/JSON/PNG/HTML out; non-zero exit (3) when "
              "memory grows, latency drifts or an allocation fails");
  soak->add_option("--mem", soak_mem, "the strategy to soak")
      ->check(CLI::IsMember({"naive", "pool", "pool-release0", "vmm", "slab"}))->capture_default_str();
  soak->add_option("--compare", soak_compare,
                   "several strategies, one after the other, same workload and seed: e.g. "
                   "naive,pool,vmm,slab");
  soak->add_flag("--parallel", sopts.parallel,
                 "run the --compare strategies at the same time, sharing the GPU (tenants of one "
                 "device), instead of one after the other");
  soak->add_option("--workload", sopts.workload,
                   "constant | ladder (1, 3/4, 1/2, 1/3 of --size, switching every --ladder-every "
                   "frames) | roi (random regions) | burst (extra frames held in spikes)")
      ->check(CLI::IsMember({"constant", "ladder", "roi", "burst"}))->capture_default_str();
  soak->add_option("--duration", soak_duration, "per strategy: seconds, or with a unit: 90s, 20m, 2h");
  soak->add_option("--frames", soak_frames, "per strategy: stop after N frames")->check(CLI::PositiveNumber);
  soak->add_option("--interval", sopts.interval_s, "seconds between samples")
      ->check(CLI::Range(0.05, 3600.0))->capture_default_str();
  soak->add_option("--probe-interval", sopts.probe_interval_s,
                   "seconds between largest-block probes of the device (0: never)")
      ->check(CLI::Range(0.0, 86400.0))->capture_default_str();
  soak->add_option("--budget", soak_budget, "device memory cap per strategy, e.g. 1.5G, 800M (emulates a shared GPU)");
  std::string soak_size = "1920x1080";
  soak->add_option("--size", soak_size, "source frame size WxH (the ladder's top rung)")->capture_default_str();
  soak->add_option("--vf", sopts.filters, "filter chain")->capture_default_str();
  soak->add_option("--device", sopts.device, "cuda, cpu or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))->capture_default_str();
  soak->add_option("--host", sopts.host, "download staging: pinned or pageable")
      ->check(CLI::IsMember({"pinned", "pageable"}))->capture_default_str();
  soak->add_option("--ladder-every", sopts.ladder_every, "ladder: frames per rung")
      ->check(CLI::PositiveNumber)->capture_default_str();
  soak->add_option("--fps", sopts.fps, "pace the source (0: full speed)")->capture_default_str();
  soak->add_option("--seed", sopts.seed, "random seed (roi workload)")->capture_default_str();
  std::string rejudge;
  soak->add_option("--rejudge", rejudge,
                   "judge a finished soak's soak.json again with these --max-growth, --max-drift "
                   "and --warmup (runs nothing)");
  soak->add_option("--out", sopts.out_dir, "write samples.csv, soak.json, *.png and report.html here");
  soak->add_option("--metrics-port", metrics_port,
                   "serve Prometheus text at http://ADDRESS:PORT/metrics while running (0: off)")
      ->check(CLI::Range(0, 65535));
  soak->add_option("--metrics-address", metrics_address, "address the metrics endpoint listens on")
      ->capture_default_str();
  soak->add_option("--max-growth", max_growth_pct,
                   "verdict: % growth of reserved device memory (CPU: RSS) after warm-up")
      ->capture_default_str();
  soak->add_option("--max-drift", max_drift_pct,
                   "verdict: % rise of p99 latency, last third vs first third after warm-up")
      ->capture_default_str();
  soak->add_option("--warmup", warmup_pct, "verdict: % of the samples ignored at the start")
      ->check(CLI::Range(0.0, 90.0))->capture_default_str();
  app.add_subcommand("filters", "list the filters --vf takes, with their parameters");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the usage error
    return rc == 0 ? 0 : 2;
  }
  av_log_set_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET);
  spdlog::set_default_logger(spdlog::stderr_color_mt("vpipe"));  // stdout is for results
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("vpipe: %l: %v");

  try {
    load_plugins(plugins);
    if (app.got_subcommand("info")) return run_info();
    if (app.got_subcommand("filters")) return run_filters();
    if (bmem->parsed()) return vpipe::bench::run_mem_bench(mopts);
    if (bkern->parsed()) return vpipe::bench::run_kernel_bench(kquick, kjson);
    if (bpipe->parsed()) return vpipe::bench::run_pipeline_bench(popts);
    if (soak->parsed()) {
      sopts.strategies = soak_compare.empty() ? std::vector<std::string>{soak_mem} : split_list(soak_compare);
      if (!soak_duration.empty()) sopts.duration_s = parse_duration(soak_duration);
      if (soak_frames > 0) sopts.frames = soak_frames;
      if (!soak_budget.empty()) sopts.budget = parse_bytes(soak_budget);
      if (std::sscanf(soak_size.c_str(), "%dx%d", &sopts.width, &sopts.height) != 2)
        throw vpipe::input_error(fmt::format("--size {}: expected WxH, e.g. 1920x1080", soak_size));
      sopts.thresholds = {warmup_pct / 100, max_growth_pct / 100, max_drift_pct / 100};
      if (!rejudge.empty()) {
        auto r = vpipe::read_soak_json(rejudge);
        for (auto& run : r.runs) {
          run.verdict = vpipe::judge(run.samples, sopts.thresholds);
          if (!run.error.empty()) run.verdict.pass = false;
        }
        print_soak_table(r);
        return r.pass() ? 0 : 3;
      }
      return run_soak_cli(sopts, metrics_address, metrics_port);
    }
    if (breplay->parsed())
      return vpipe::bench::run_replay(replay_log, replay_mem, replay_budget);
    if (frames > 0) topts.max_frames = frames;
    return run_transcode(topts, report_path);
  } catch (const std::exception& e) {
    if (isatty(STDERR_FILENO)) fmt::print(stderr, "\n");
    fmt::print(stderr, "vpipe: error: {}\n", e.what());
    return 1;
  }
}
