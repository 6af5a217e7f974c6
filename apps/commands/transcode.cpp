// vpipe transcode IN OUT: its flags come from the option schema (one row each,
// option_schema.hpp); one run, or --streams N runs at once.
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <map>
#include <system_error>

#include "commands/command.hpp"
#include "commands/common.hpp"
#include "commands/exit_codes.hpp"
#include "soak/metrics_server.hpp"
#include "transcode_metrics.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/run_files.hpp"
#include "vpipe/pipeline/session/live_stats.hpp"
#include "vpipe/pipeline/session/multi_transcode.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/stream_copy.hpp"
#include "vpipe/pipeline/session/transcode.hpp"
#include "vpipe/pipeline/session/transcode_files.hpp"

namespace vpipe::cli {
namespace {

std::string format_eta(double s) {
  if (s < 0 || s > 360000) return "--";
  const int t = static_cast<int>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

// Progress on a terminal, and the signals: Ctrl-C / SIGTERM stop gracefully;
// a full disk or a closed pipe fails the write with an error we report,
// rather than the signal killing us mid-file.
RunHooks prepare_run(bool tty) {
  RunHooks hooks;
  if (tty) {
    hooks.on_progress = [](const TranscodeProgress& p) {
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
  hooks.interrupt = &stop_signal();
  install_stop_signals();
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  return hooks;
}

// --streams N: one line per stream, the exit status of the worst.
int run_streams(const TranscodeOptions& opts, const RunHooks& hooks, const std::string& report_path,
                bool tty) {
  const int streams = opts.streams;
  const auto multi = transcode_streams(opts, hooks);
  if (tty) fmt::print(stderr, "\n");
  fmt::print(stderr, "vpipe: {} streams in {:.2f} s, {:.1f} fps in total\n", streams, multi.wall_s,
             multi.fps_total());
  int rc = 0;
  for (std::size_t i = 0; i < multi.streams.size(); ++i) {
    const auto& r = multi.streams[i];
    if (!multi.failures[i].empty()) {
      fmt::print(stderr, "vpipe: stream {}: failed: {}\n", i + 1, multi.failures[i]);
      rc = kFailed;
      continue;
    }
    fmt::print(stderr,
               "vpipe: stream {} → {}: {} frames, {:.1f} fps, latency p50 {:.1f} ms p99 {:.1f} ms, "
               "{} dropped{}\n",
               i + 1, r.output, r.video_packets_written, r.fps, r.latency_ms_p50, r.latency_ms_p99,
               r.frames_dropped, r.errors() ? fmt::format(", {} errors", r.errors()) : "");
    if (r.interrupted && rc == 0) rc = signal_exit_status();
    if (r.errors() > 0 && rc == 0) rc = kCompletedWithErrors;
  }
  write_json(report_path, multi.to_json());
  return rc;
}

// Several outputs: a line each, and the one the fork waited on most (it holds the others back).
void print_outputs(const TranscodeReport& r) {
  if (r.outputs.size() < 2) return;
  const OutputReport* slowest = &r.outputs.front();
  for (const auto& o : r.outputs) {
    fmt::print(stderr, "vpipe:   → {}: {} frames {}x{} ({}), {:.1f} fps, fork waited {:.2f} s{}\n",
               o.output, o.frames, o.format.width, o.format.height, o.encoder, o.fps, o.fork_wait_s,
               o.failure.empty() ? "" : ", failed: " + o.failure);
    if (o.fork_wait_s > slowest->fork_wait_s) slowest = &o;
  }
  if (slowest->fork_wait_s > 0.1 * r.wall_s)
    fmt::print(stderr,
               "vpipe:   {} held the others back (the fork waited on it {:.0f} % of the run)\n",
               slowest->output, 100 * slowest->fork_wait_s / r.wall_s);
}

void print_summary(const TranscodeReport& r) {
  for (const auto& note : r.notes) fmt::print(stderr, "vpipe: {}\n", note);
  if (const auto& m = r.memory)
    fmt::print(stderr,
               "vpipe: CUDA path ({} decode), --mem {} --host {}: {} allocations, peak {:.1f} MB, "
               "allocate p50 {:.2f} µs, {} device syncs, {} failures\n",
               r.decode, m->strategy, m->host_staging, m->allocations,
               static_cast<double>(m->bytes_peak) / 1e6, m->allocate_us.p50, m->device_syncs,
               m->failures);
  if (r.encoder == "copy") {  // a stream copy: packets, not frames through a pipeline
    fmt::print(stderr, "vpipe: {} → {}: stream copy in {:.2f} s{}{}\n", r.input, r.output, r.wall_s,
               r.errors() ? fmt::format(", completed with {} errors (damaged packets left out)",
                                        r.errors())
                          : "",
               r.interrupted ? " (interrupted: output finalized)" : "");
    return;
  }
  fmt::print(stderr,
             "vpipe: {} → {}: {} frames {}x{} in {:.2f} s ({:.1f} fps), latency p50 {:.1f} ms p99 "
             "{:.1f} ms{}{}{}\n",
             r.input, r.output, r.video_packets_written, r.output_format.width,
             r.output_format.height, r.wall_s, r.fps, r.latency_ms_p50, r.latency_ms_p99,
             r.encoder_dropped ? fmt::format(", {} of them dropped by the encoder (no bytes: "
                                             "players repeat the frame before)",
                                             r.encoder_dropped)
                               : "",
             r.errors() ? fmt::format(", completed with {} errors", r.errors())
             : r.frames_dropped
                 ? fmt::format(", {} frames dropped (--drop {})", r.frames_dropped, r.drop)
                 : "",
             r.output_cut    ? " (interrupted: writing stopped, the output was not taking data)"
             : r.interrupted ? " (interrupted: output finalized)"
                             : "");
  print_outputs(r);
  if (r.glass && r.glass->frames_with_stamp > 0)
    fmt::print(stderr,
               "vpipe: glass to glass (stamp → encoder): p50 {:.1f} ms p99 {:.1f} ms max {:.1f} ms "
               "over {} frames\n",
               r.glass->ms.p50, r.glass->ms.p99, r.glass->ms.max, r.glass->frames_with_stamp);
}

class TranscodeCommand final : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    app_ = parent.add_subcommand(
        "transcode",
        "decode IN, run the filter chain, encode OUT (audio, subtitles and chapters kept)");
    for (const auto& s : option_schema())
      if (s.front_ends & kCommandLine) add_flag_of(s);
    app_->add_option("--report", report_path_,
                     "write a JSON report (frames, fps, latency, stages) to this file, or to "
                     "the standard output with --report -");
    add_metrics_options(app_, metrics_);
    app_->footer(
        "Each option is also a key of vpipe.transcode() in Python and, but for streams, gpus "
        "and on_gpu_error, of a stream in vpipe run's config: 'vpipe options' and "
        "docs/OPTIONS.md list the keys.");
    return app_;
  }

  // The flags given, each set through its schema row; errors name the flag.
  void finish() override {
    for (const auto& s : option_schema()) {
      const auto given = given_.find(s.key);
      if (given == given_.end()) continue;
      for (const auto& value : given->second) {
        try {
          s.set(options_, value);
        } catch (const usage_error& e) {
          throw usage_error(fmt::format("{}{}", s.flag, e.what()));  // "--crf 99: outside"
        }
      }
    }
  }

  int run() override;

 private:
  // One flag from its schema row: its help, the look of its value and its default.
  void add_flag_of(const OptionSpec& s) {
    const std::string help = s.applies.empty() ? s.help : s.applies + ": " + s.help;
    auto& given = given_[s.key];
    if (s.form == Form::kSwitch) {
      app_->add_flag_callback(
          s.flag, [&given] { given = {"true"}; }, help);
      return;
    }
    if (s.form == Form::kRepeatable) {
      app_->add_option(s.flag, given, help)->type_name(s.value);
      return;
    }
    auto* opt = app_->add_option_function<std::string>(
        s.flag, [&given](const std::string& v) { given = {v}; }, help);
    opt->type_name(s.value);
    if (s.form == Form::kPositional) opt->required();
    if (const auto d = s.default_text(); !d.empty()) opt->default_str(d);
  }

  CLI::App* app_ = nullptr;
  TranscodeOptions options_;
  std::map<std::string, std::vector<std::string>> given_;  // schema key → the values given
  std::string report_path_;
  MetricsEndpoint metrics_;
};

int TranscodeCommand::run() {
  {  // every file the run touches, the report too: checked before the work, not after
    RunFiles files;
    declare_files(files, options_);
    files.writes(report_path_, "--report");
    files.check();
    if (report_path_ == "-" && stdout_was_closed())
      throw usage_error("--report -: the standard output is closed; give the report a file");
    if (const auto local = local_file(report_path_)) check_writable(*local, "--report");
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto hooks = prepare_run(tty);
  // The endpoint reads the registry: it goes first.
  LiveRegistry live;
  std::unique_ptr<MetricsServer> server;
  if (metrics_.port > 0 && is_stream_copy(options_))  // a copy has no live counters to serve
    throw usage_error(
        "--encoder copy remuxes the video without decoding it, so it cannot apply "
        "--metrics-port: leave it out, or choose an encoder (--encoder libx264…)");
  if (metrics_.port > 0) {
    hooks.live = &live;
    server = std::make_unique<MetricsServer>(
        metrics_.address, metrics_.port, [&] { return transcode_metrics_text(live.sample()); },
        [&] { return live.ready(); });
    fmt::print(stderr, "vpipe: metrics at http://{}:{}/metrics (/healthz, /readyz)\n",
               metrics_.address, server->port());
  }
  if (options_.streams > 1 || !options_.gpus.empty())
    return run_streams(options_, hooks, report_path_, tty);
  TranscodeReport r;
  try {
    r = transcode(options_, hooks);
  } catch (const transcode_failed& e) {
    if (tty) fmt::print(stderr, "\n");
    write_json(report_path_, e.report.to_json());  // what was done before it failed
    print_outputs(e.report);                       // several outputs: which finished
    throw;
  }
  try {  // messages only: with stderr full (2>/dev/full) the finished run still counts
    if (tty) fmt::print(stderr, "\n");
    print_summary(r);
  } catch (const std::system_error&) {
  }
  write_json(report_path_, r.to_json());
  if (r.interrupted) return signal_exit_status();
  // The output is complete and playable, but frames were damaged or lost.
  if (r.errors() > 0) return kCompletedWithErrors;
  return kDone;
}

}  // namespace

std::unique_ptr<Command> make_transcode_command() { return std::make_unique<TranscodeCommand>(); }

}  // namespace vpipe::cli
