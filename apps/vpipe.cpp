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
//   vpipe bench decode IN   NVDEC sessions, --streams and --decode-sessions vs raw decode
//   vpipe bench chain IN    CUDA filter chains: launches per filter vs one CUDA Graph
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
// output is complete), 129/130/143 interrupted by SIGHUP/SIGINT/SIGTERM (the output is
// finalized and playable).
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cerrno>
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

#include "bench_chain.hpp"
#include "bench_decode.hpp"
#include "bench_kernels.hpp"
#include "bench_mem.hpp"
#include "bench_pipeline.hpp"
#include "cli.hpp"
#include "exit_codes.hpp"
#include "run/fleet.hpp"
#include "soak/metrics_server.hpp"
#include "soak/soak.hpp"
#include "transcode_metrics.hpp"
#include "vpipe/memory/crash_trace.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/filter.hpp"
#include "vpipe/pipeline/hw_probe.hpp"
#include "vpipe/pipeline/live.hpp"
#include "vpipe/pipeline/option_schema.hpp"
#include "vpipe/pipeline/paths.hpp"
#include "vpipe/pipeline/transcode.hpp"

namespace {

std::atomic<int> g_signal{0};
// First SIGINT/SIGTERM/SIGHUP (a closed terminal): stop gracefully (the output is
// finalized; vpipe run takes SIGHUP back for re-reading its config). Second:
// leave now, removing the unfinished outputs (written beside their targets, which
// stay as they were), which would not play, unless --keep-partial; one line each.
extern "C" void on_signal(int sig) {
  if (g_signal.load() != 0) {
    if (vpipe::remove_partial_outputs_now() == 0) {
      const char line[] =
          "vpipe: stopped at once (second signal): unfinished outputs left under their "
          "temporary names, NAME.vpipe-partial-PID.EXT (--keep-partial), or none begun; the "
          "files already at the output paths are untouched\n";
      (void)!write(STDERR_FILENO, line, sizeof line - 1);
    }
    std::_Exit(128 + sig);
  }
  g_signal.store(sig);
}
extern "C" void on_wake(int) {}  // SIGURG: only breaks a blocking read (DemuxSource::wake)

// Without SA_RESTART: a signal makes a blocking open or read return EINTR,
// and the input's interrupt callback then ends it (a FIFO with no writer).
std::atomic<int> g_reload{0};
extern "C" void on_reload(int) { g_reload.store(1); }

void install_signals() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  sa.sa_handler = on_wake;
  sigaction(SIGURG, &sa, nullptr);
}

std::string format_eta(double s) {
  if (s < 0 || s > 360000) return "--";
  const int t = static_cast<int>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

void write_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  vpipe::write_file(path, j.dump(2) + '\n', "report");
}

// Progress on a terminal, and the signals: Ctrl-C / SIGTERM stop gracefully;
// a full disk or a closed pipe fails the write with an error we report,
// rather than the signal killing us mid-file.
vpipe::RunHooks prepare_run(bool tty) {
  vpipe::RunHooks hooks;
  if (tty) {
    hooks.on_progress = [](const vpipe::TranscodeProgress& p) {
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
  hooks.interrupt = &g_signal;
  install_signals();
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  return hooks;
}

// --streams N: one line per stream, the exit status of the worst.
int run_streams(const vpipe::TranscodeOptions& opts, const vpipe::RunHooks& hooks,
                const std::string& report_path, bool tty) {
  const int streams = opts.streams;
  for (int k = 1; k <= streams && streams > 1; ++k)  // each stream's own output, before the work
    vpipe::check_side_file(report_path, "--report", opts.input,
                           vpipe::stream_output_name(opts.output, k));
  const auto multi = vpipe::transcode_streams(opts, hooks);
  if (tty) fmt::print(stderr, "\n");
  fmt::print(stderr, "vpipe: {} streams in {:.2f} s, {:.1f} fps in total\n", streams, multi.wall_s,
             multi.fps_total());
  int rc = 0;
  for (std::size_t i = 0; i < multi.streams.size(); ++i) {
    const auto& r = multi.streams[i];
    if (!multi.failures[i].empty()) {
      fmt::print(stderr, "vpipe: stream {}: failed: {}\n", i + 1, multi.failures[i]);
      rc = 1;
      continue;
    }
    fmt::print(stderr,
               "vpipe: stream {} → {}: {} frames, {:.1f} fps, latency p50 {:.1f} ms p99 {:.1f} ms, "
               "{} dropped{}\n",
               i + 1, r.output, r.video_packets_written, r.fps, r.latency_ms_p50, r.latency_ms_p99,
               r.frames_dropped, r.errors() ? fmt::format(", {} errors", r.errors()) : "");
    if (r.interrupted && rc == 0) rc = 128 + g_signal.load();
    if (r.errors() > 0 && rc == 0) rc = 4;
  }
  write_json(report_path, multi.to_json());
  return rc;
}

void print_summary(const vpipe::TranscodeReport& r) {
  for (const auto& note : r.notes) fmt::print(stderr, "vpipe: {}\n", note);
  if (const auto& m = r.memory)
    fmt::print(stderr,
               "vpipe: CUDA path ({} decode), --mem {} --host {}: {} allocations, peak {:.1f} MB, "
               "allocate p50 {:.2f} µs, {} device syncs, {} failures\n",
               r.decode, m->strategy, m->host_staging, m->allocations,
               static_cast<double>(m->bytes_peak) / 1e6, m->allocate_us.p50, m->device_syncs,
               m->failures);
  fmt::print(stderr,
             "vpipe: {} → {}: {} frames {}x{} in {:.2f} s ({:.1f} fps), latency p50 {:.1f} ms p99 "
             "{:.1f} ms{}{}\n",
             r.input, r.output, r.video_packets_written, r.output_format.width,
             r.output_format.height, r.wall_s, r.fps, r.latency_ms_p50, r.latency_ms_p99,
             r.errors() ? fmt::format(", completed with {} errors", r.errors())
             : r.frames_dropped
                 ? fmt::format(", {} frames dropped (--drop {})", r.frames_dropped, r.drop)
                 : "",
             r.output_cut    ? " (interrupted: writing stopped, the output was not taking data)"
             : r.interrupted ? " (interrupted: output finalized)"
                             : "");
  if (r.glass && r.glass->frames_with_stamp > 0)
    fmt::print(stderr,
               "vpipe: glass to glass (stamp → encoder): p50 {:.1f} ms p99 {:.1f} ms max {:.1f} ms "
               "over {} frames\n",
               r.glass->ms.p50, r.glass->ms.p99, r.glass->ms.max, r.glass->frames_with_stamp);
}

// vpipe run: the config's streams for this shard (with --on-gpu-error for each).
std::vector<vpipe::StreamSpec> fleet_streams(const std::string& config, std::pair<int, int> shard,
                                             vpipe::OnGpuError on_gpu_error,
                                             const std::string& report) {
  auto c = vpipe::load_fleet_config(config);
  vpipe::check_fleet_paths(c, report);
  for (auto& s : c.streams) s.options.on_gpu_error = on_gpu_error;
  std::vector<std::string> names;
  for (const auto& s : c.streams) names.push_back(s.name);
  const auto mine = vpipe::shard_streams(names, shard.first, shard.second);
  std::vector<vpipe::StreamSpec> out;
  for (auto& s : c.streams)
    if (std::find(mine.begin(), mine.end(), s.name) != mine.end()) out.push_back(std::move(s));
  return out;
}

// --gpus of `vpipe run`: each listed GPU's load to start from, its free memory as its budget.
std::vector<vpipe::GpuLoad> gpu_loads(const std::vector<int>& gpus) {
  std::vector<vpipe::GpuLoad> loads;
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

int run_fleet(const vpipe::cli::Cli& c) {
  const auto shard = vpipe::parse_shard(c.run_shard);
  auto streams = fleet_streams(c.run_config, shard, c.run_on_gpu_error, c.report_path);
  if (c.run_check) {  // stdout: one line per stream of this shard
    for (const auto& s : streams)
      fmt::print("{}\t{}\t{}\n", s.name, s.options.input, s.options.output);
    return 0;
  }
  install_signals();
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_reload;
  sigaction(SIGHUP, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  // Members in the order they must die, last first: the endpoint, then the
  // supervisors (their sessions leave the registry; they release their GPUs),
  // then the registry and the GPUs.
  vpipe::GpuPlacer gpus(gpu_loads(c.run_gpus));
  vpipe::LiveRegistry live;
  vpipe::Fleet fleet(&live, &gpus);
  std::unique_ptr<vpipe::MetricsServer> server;
  if (c.metrics_port > 0) {
    server = std::make_unique<vpipe::MetricsServer>(
        c.metrics_address, c.metrics_port,
        [&] { return vpipe::transcode_metrics_text(live.sample()) + fleet.metrics_text(); },
        [&] { return live.ready(); });
    fmt::print(stderr, "vpipe: metrics at http://{}:{}/metrics (/healthz, /readyz)\n",
               c.metrics_address, server->port());
  }
  fmt::print(stderr, "vpipe run: {} stream(s) of {} (shard {}/{})\n", streams.size(), c.run_config,
             shard.first, shard.second);
  fleet.apply(streams);
  bool stopping = false;
  while (!fleet.all_finished()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_signal.load() && !std::exchange(stopping, true)) fleet.stop_all();
    if (g_reload.exchange(0) && !stopping) {
      try {
        streams = fleet_streams(c.run_config, shard, c.run_on_gpu_error, c.report_path);
        fleet.apply(streams);
        fmt::print(stderr, "vpipe run: {} re-read: {} stream(s)\n", c.run_config, streams.size());
      } catch (const vpipe::input_error& e) {
        fmt::print(stderr, "vpipe run: config not re-read, the streams go on: {}\n", e.what());
      }
    }
  }
  const auto status = fleet.status();
  write_json(c.report_path,
             {{"config", c.run_config}, {"shard", c.run_shard}, {"streams", status}});
  int rc = 0;
  for (const auto& s : status) {
    fmt::print(stderr, "vpipe run: {}: {}, {} restart(s){}\n", s.name, s.state, s.restarts,
               s.last_error.empty() ? "" : "; last error: " + s.last_error);
    if (s.state == "gave up") rc = vpipe::cli::kFailed;
  }
  return g_signal.load() ? 128 + g_signal.load() : rc;
}

int run_transcode(const vpipe::TranscodeOptions& opts, const std::string& report_path,
                  const std::string& metrics_address, int metrics_port) {
  vpipe::check_side_file(report_path, "--report", opts.input,
                         opts.output);  // before the work, not after
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto hooks = prepare_run(tty);
  // The endpoint reads the registry: it goes first.
  vpipe::LiveRegistry live;
  std::unique_ptr<vpipe::MetricsServer> server;
  if (metrics_port > 0) {
    hooks.live = &live;
    server = std::make_unique<vpipe::MetricsServer>(
        metrics_address, metrics_port, [&] { return vpipe::transcode_metrics_text(live.sample()); },
        [&] { return live.ready(); });
    fmt::print(stderr, "vpipe: metrics at http://{}:{}/metrics (/healthz, /readyz)\n",
               metrics_address, server->port());
  }
  if (opts.streams > 1 || !opts.gpus.empty()) return run_streams(opts, hooks, report_path, tty);
  vpipe::TranscodeReport r;
  try {
    r = vpipe::transcode(opts, hooks);
  } catch (const vpipe::transcode_failed& e) {
    if (tty) fmt::print(stderr, "\n");
    write_json(report_path, e.report.to_json());  // what was done before it failed
    throw;
  }
  if (tty) fmt::print(stderr, "\n");
  print_summary(r);
  write_json(report_path, r.to_json());
  if (r.interrupted) return 128 + g_signal.load();
  // The output is complete and playable, but frames were damaged or lost.
  if (r.errors() > 0) return vpipe::cli::kCompletedWithErrors;
  return vpipe::cli::kDone;
}

void print_soak_table(const vpipe::SoakResult& result) {
  fmt::print(
      "| strategy | verdict | frames | mean fps | peak held MB | peak used MB | memory growth | "
      "host RSS growth | p99 drift | probes (max ms) | failures | why |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : result.runs) {
    std::string why;
    for (const auto& reason : r.verdict.reasons) why += (why.empty() ? "" : "; ") + reason;
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
        vpipe::soak_label(r.strategy, r.gpu), r.verdict.pass ? "PASS" : "FAIL", r.frames,
        r.wall_s > 0 ? r.frames / r.wall_s : 0.0, held, used, pct(r.verdict.memory_growth),
        r.verdict.memory_metric, pct(r.verdict.rss_growth), pct(r.verdict.p99_drift), probes,
        probe_max, r.verdict.failures, why);
  }
}

int run_soak_cli(vpipe::SoakOptions& o, const std::string& metrics_address, int metrics_port) {
  if (!o.out_dir.empty()) vpipe::check_writable_dir(o.out_dir, "--out");  // not after a 2-hour run
  o.interrupt = &g_signal;
  install_signals();
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
    fmt::print(stderr, "vpipe soak: metrics at http://{}:{}/metrics\n", metrics_address,
               server->port());
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto result = vpipe::run_soak(o, [&](const vpipe::SoakSample& s) {
    {
      std::lock_guard lock(mu);
      latest[vpipe::soak_label(s.strategy, s.gpu)] = s;
    }
    const std::string mem = s.reserved_mb ? fmt::format("reserved {:.0f} MB", *s.reserved_mb)
                                          : fmt::format("RSS {:.0f} MB", s.rss_mb);
    const std::string line =
        fmt::format("[{}] {:.0f} s  {} frames  {:.0f} fps  p99 {:.2f} ms  {}  {}x{}{}",
                    vpipe::soak_label(s.strategy, s.gpu), s.t_s, s.frames, s.fps, s.p99_ms, mem,
                    s.width, s.height, s.failures ? fmt::format("  {} FAILURES", s.failures) : "");
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
  fmt::print("CUDA driver: {}\n", cuda.driver_version
                                      ? vpipe::cuda_version_string(cuda.driver_version)
                                      : std::string("none"));
  if (cuda.devices.empty()) {
    fmt::print("CUDA devices: none ({}); vpipe runs the CPU path\n", cuda.unavailable_reason);
  }
  for (const auto& d : cuda.devices) {
    fmt::print(
        "CUDA device {}: {}, compute {}.{}, {} SMs, {:.1f} GiB ({:.1f} GiB free), memory pools: "
        "{}\n",
        d.index, d.name, d.cc_major, d.cc_minor, d.multiprocessors,
        static_cast<double>(d.total_memory) / (1 << 30),
        static_cast<double>(d.free_memory) / (1 << 30), d.memory_pools ? "yes" : "no");
  }
  const auto hw = vpipe::probe_hw_codecs();
  fmt::print("FFmpeg CUDA hwaccel: {} ({})\n", hw.cuda_hwdevice ? "yes" : "no", hw.cuda_detail);
  fmt::print("NVDEC through FFmpeg: {} ({})\n", hw.nvdec ? "usable" : "not usable",
             hw.nvdec_detail);
  fmt::print("NVENC through FFmpeg: {} ({})\n", hw.nvenc ? "usable" : "not usable",
             hw.nvenc_detail);
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
// A --plugin file wins over a default one of the same file name (the user's own build).
void load_plugins(const std::vector<std::string>& explicit_plugins) {
  namespace fs = std::filesystem;
  std::vector<std::string> named;
  for (const auto& p : explicit_plugins) named.push_back(fs::path(p).filename().string());
  if (const char* dir = std::getenv("VPIPE_PLUGIN_DIR")) {
    vpipe::load_filter_plugins_from(dir, named);
  } else {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
    if (!ec) {
      vpipe::load_filter_plugins_from((exe / "plugins").string(), named);
      vpipe::load_filter_plugins_from((exe / ".." / "lib" / "vpipe" / "plugins").string(), named);
    }
  }
  for (const auto& p : explicit_plugins) vpipe::load_filter_plugin(p);
}

int run_filters() {
  auto& reg = vpipe::FilterRegistry::instance();
  for (const auto& name : reg.names()) {
    const auto& info = reg.info(name);
    fmt::print("{}\n    {}\n    formats: {}; CUDA: {}\n", name, info.summary, info.formats,
               info.cuda ? "yes" : "no (CPU only)");
    for (const auto& p : info.params) {
      fmt::print(
          "    {:<8} {}{}\n", p.name, p.help,
          p.default_value.empty() ? " (required)" : fmt::format(" (default {})", p.default_value));
    }
  }
  fmt::print(
      "\nChain syntax: name=value:key=value,next…  e.g. \"resize=1280x720,blur=sigma=1.5\"\n");
  return 0;
}

// The first word that is not an option must be a command: name the one typed
// when it is not ("A subcommand is required" does not say which word was wrong).
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--plugin") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->check_name(a)) return {};
    std::string names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    return fmt::format("unknown command '{}' (commands: {}; see vpipe --help)", a, names);
  }
  return {};
}

// A closed stdin, stdout or stderr (`2>&-`, a daemon's launcher) becomes
// /dev/null: messages then go nowhere instead of aborting the run at its last
// line (fmt throws on a closed stream), and no output file is opened as fd 2,
// where every later message would be written into the video.
void open_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int null = ::open("/dev/null", O_RDWR);  // the lowest free descriptor: fd
      if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  open_standard_fds();
  vpipe::install_crash_trace("vpipe");
  const auto cli = vpipe::cli::make_cli();
  auto& c = *cli;
  if (const auto why = unknown_command(c.app, argc, argv); !why.empty()) {
    fmt::print(stderr, "vpipe: error: {}\n", why);
    return vpipe::cli::kUsage;
  }
  try {
    c.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = c.app.exit(e);  // prints help, or the usage error
    return rc == 0 ? vpipe::cli::kDone : vpipe::cli::kUsage;
  }
  av_log_set_level(c.verbose ? AV_LOG_WARNING : AV_LOG_QUIET);
  spdlog::set_default_logger(spdlog::stderr_color_mt("vpipe"));  // stdout is for results
  spdlog::set_level(c.verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("vpipe: %l: %v");

  try {
    load_plugins(c.plugins);
    vpipe::cli::finish(c);
    if (c.app.got_subcommand("info")) return run_info();
    if (c.app.got_subcommand("filters")) return run_filters();
    if (c.app.got_subcommand("options")) {
      fmt::print("{}", vpipe::option_table_markdown());
      return vpipe::cli::kDone;
    }
    if (c.bmem->parsed()) return vpipe::bench::run_mem_bench(c.mopts);
    if (c.bkern->parsed()) return vpipe::bench::run_kernel_bench(c.kopts);
    if (c.bpipe->parsed()) return vpipe::bench::run_pipeline_bench(c.popts);
    if (c.bdec->parsed()) return vpipe::bench::run_decode_bench(c.dopts);
    if (c.bchain->parsed()) return vpipe::bench::run_chain_bench(c.copts);
    if (c.benc->parsed()) return vpipe::bench::run_encode_bench(c.eopts);
    if (c.bhead->parsed()) return vpipe::run_headroom(c.hopts);
    if (c.soak->parsed()) {
      if (!c.rejudge.empty()) {
        auto r = vpipe::read_soak_json(c.rejudge);
        for (auto& run : r.runs) {
          run.verdict = vpipe::judge(run.samples, c.sopts.thresholds);
          if (!run.error.empty()) run.verdict.pass = false;
        }
        print_soak_table(r);
        return r.pass() ? vpipe::cli::kDone : vpipe::cli::kVerdictFailed;
      }
      return run_soak_cli(c.sopts, c.metrics_address, c.metrics_port);
    }
    if (c.breplay->parsed())
      return vpipe::bench::run_replay(c.replay_log, c.replay_mem, c.replay_budget);
    if (c.run->parsed()) return run_fleet(c);
    return run_transcode(c.topts, c.report_path, c.metrics_address, c.metrics_port);
  } catch (const vpipe::usage_error& e) {  // a bad option value: like CLI11's own checks
    fmt::print(stderr, "vpipe: error: {}\n", e.what());
    return vpipe::cli::kUsage;
  } catch (const vpipe::chain_error& e) {  // bad --vf text
    fmt::print(stderr, "vpipe: error: {}\n", e.what());
    return vpipe::cli::kUsage;
  } catch (const std::exception& e) {
    if (isatty(STDERR_FILENO)) fmt::print(stderr, "\n");
    fmt::print(stderr, "vpipe: error: {}\n", e.what());
    return g_signal.load() ? 128 + g_signal.load()
                           : vpipe::cli::kFailed;  // Ctrl-C ended a wait: "interrupted"
  }
}
