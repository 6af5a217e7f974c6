// vpipe's command line: every command and option, and the conversions the
// parsed values need. Shared by the program and the CLI fuzz target.
#include "cli.hpp"
#include "exit_codes.hpp"

#include <cuda_runtime_api.h>

#include "vpipe/pipeline/gpu_placement.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/option_schema.hpp"

namespace vpipe::cli {

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

namespace {

// A count of 1 or more, said in words (CLI::PositiveNumber's message prints a
// 300-digit upper bound).
const CLI::Validator kPositiveCount(
    [](std::string& v) {
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      return end != v.c_str() && *end == 0 && n >= 1 ? std::string()
                                                     : v + ": expected a whole number, 1 or more";
    },
    "N>=1");

// An option whose value is an enum: the user types one of its names (one
// table, vpipe::EnumNames), the program sees the value.
template <class E>
CLI::Option* add_enum(CLI::App* app, const std::string& flag, E& value, const std::string& help) {
  std::string names;
  for (const auto& [name, v] : vpipe::names_of<E>()) names += (names.empty() ? "" : "|") + name;
  CLI::CheckedTransformer to_value(vpipe::names_of<E>());
  to_value.description("{" + names + "}");
  return app->add_option(flag, value, help)
      ->transform(to_value)
      ->default_str(std::string(vpipe::name_of(value)));
}

void add_transcode(Cli& c);  // one function per subcommand's options
// --metrics-port / --metrics-address: one endpoint for soak and transcode.
void add_metrics_options(CLI::App* app, int& port, std::string& address) {
  app->add_option(
         "--metrics-port", port,
         "serve Prometheus text at http://ADDRESS:PORT/metrics while running, and /healthz, "
         "/readyz (200 once every input is open and has a frame out) (0: off)")
      ->check(CLI::Range(0, 65535));
  app->add_option("--metrics-address", address, "address the metrics endpoint listens on")
      ->capture_default_str();
}

// --quick on the benches that take an input: the smallest run of every row kind (a smoke, not
// for results); finish() applies it to the options the user did not give.
void add_quick(CLI::App* bench, bool& quick) {
  bench->add_flag("--quick", quick,
                  "the smallest run of each kind of row (options given explicitly still hold): "
                  "a smoke run, not for results");
}

void add_bench(Cli& c);
void add_bench_headroom(Cli& c);
void add_bench_decode(Cli& c);
void add_bench_chain(Cli& c);
void add_bench_encode(Cli& c);
void add_soak(Cli& c);

}  // namespace

void add_run(Cli& c) {
  c.run =
      c.app.add_subcommand("run",
                           "run many feeds from one config file (YAML or JSON), each restarted by "
                           "its own policy; SIGHUP re-reads the file: streams added start, "
                           "removed stop (outputs finalized), changed restart; SIGTERM drains all");
  c.run->footer(
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
  c.run->add_option("config", c.run_config, "the config file")
      ->required()
      ->check(CLI::ExistingFile);
  c.run
      ->add_option("--shard", c.run_shard,
                   "run shard INDEX of COUNT: the streams sorted by name, dealt round-robin (a "
                   "StatefulSet's "
                   "pod ordinal, an Indexed Job's completion index)")
      ->capture_default_str();
  c.run->add_option("--report", c.report_path,
                    "write every stream's state, restarts and run reports as JSON");
  c.run->add_option("--gpus", c.run_gpus_text,
                    "place each stream on the GPU with the most headroom (all, a count, or a "
                    "list such as 0,1); each stream's session makes its strategy on its GPU");
  add_enum(c.run, "--on-gpu-error", c.run_on_gpu_error,
           "with --gpus: a stream that fails with a CUDA error restarts on another GPU, that "
           "GPU taking no more streams (move), or by its restart policy where it was (fail)");
  c.run->add_flag("--check", c.run_check,
                  "read and check the config, print this shard's streams, run nothing");
  add_metrics_options(c.run, c.metrics_port, c.metrics_address);
}

std::unique_ptr<Cli> make_cli() {
  auto c = std::make_unique<Cli>();
  auto& app = c->app;
  app.footer(
      "Examples:\n"
      "  vpipe transcode media/sample-720p.mp4 out.mp4 --vf \"resize=640x360,blur=sigma=1.5\"\n"
      "  vpipe transcode in.mp4 out.mp4 --vf \"resize=1280x720,blur=sigma=1.5\" --mem pool --host "
      "pinned\n"
      "  vpipe transcode in.mkv out.mkv --encoder ffv1 --report report.json\n"
      "  vpipe transcode in.mp4 null --decode nvdec --vf resize=1280x720 --loop 10   (measure, "
      "write nothing)\n"
      "  vpipe transcode udp://127.0.0.1:5000 live.mp4 --vf resize=1280x720   (live MPEG-TS in)\n"
      "  vpipe transcode in.mp4 udp://127.0.0.1:5002 --realtime   (MPEG-TS over UDP out, paced)\n"
      "  vpipe transcode in.mp4 null --realtime --streams 8 --mem slab   (8 paced feeds, one GPU)\n"
      "  vpipe bench pipeline in-1080p.mp4 --loop 8\n"
      "  vpipe bench decode in-1080p.mp4 --sessions 1,7,14 --streams 7,14,28\n"
      "  vpipe bench encode in-1080p.mp4 --vf resize=1280x720 --segments 1,2,4,8\n"
      "  vpipe run fleet.yaml --metrics-port 9464   (many feeds, restarts, SIGHUP reloads)\n"
      "  vpipe filters\n"
      "  vpipe info\n\n" +
      exit_code_help());
  app.require_subcommand(1);
  auto& verbose = c->verbose;
  app.add_flag("-v,--verbose", verbose, "log FFmpeg warnings and debug detail");
  auto& plugins = c->plugins;
  app.add_option("--plugin", plugins,
                 "load a filter plugin (.so built with vpipe_add_filter_plugin; repeatable). "
                 "Plugins in $VPIPE_PLUGIN_DIR, else in <vpipe's dir>/plugins and "
                 "<vpipe's dir>/../lib/vpipe/plugins, load by themselves");

  add_transcode(*c);
  app.add_subcommand("info", "show CUDA devices, NVDEC/NVENC availability and library versions");
  add_bench(*c);
  add_bench_headroom(*c);
  add_bench_decode(*c);
  add_bench_chain(*c);
  add_bench_encode(*c);
  add_soak(*c);
  app.add_subcommand("filters", "list the filters --vf takes, with their parameters");
  app.add_subcommand("options",
                     "list transcode's options: key, flag, values, default, where each applies "
                     "(markdown; docs/OPTIONS.md is this)");
  add_run(*c);
  return c;
}

namespace {

// transcode's options: one flag per row of the option schema (option_schema.hpp),
// its help, value and default from the row; finish() sets each given value through it.
void add_transcode(Cli& c) {
  c.tc = c.app.add_subcommand("transcode",
                              "decode IN, run the filter chain, encode OUT (audio copied)");
  for (const auto& s : vpipe::option_schema()) {
    if (!(s.front_ends & vpipe::kCommandLine)) continue;
    const std::string help = s.applies.empty() ? s.help : s.applies + ": " + s.help;
    auto& given = c.tc_given[s.key];
    CLI::Option* opt = nullptr;
    if (s.form == vpipe::Form::kSwitch) {
      opt = c.tc->add_flag_callback(
          s.flag, [&given] { given = {"true"}; }, help);
    } else if (s.form == vpipe::Form::kRepeatable) {
      opt = c.tc->add_option(s.flag, given, help)->type_name(s.value);
    } else {
      opt = c.tc->add_option_function<std::string>(
          s.flag, [&given](const std::string& v) { given = {v}; }, help);
      opt->type_name(s.value);
      if (s.form == vpipe::Form::kPositional) opt->required();
      if (const auto d = s.default_text(); !d.empty()) opt->default_str(d);
    }
  }
  c.tc->add_option("--report", c.report_path, "write a JSON report (frames, fps, latency, stages)");
  add_metrics_options(c.tc, c.metrics_port, c.metrics_address);
  c.tc->footer(
      "Each option is also a key of vpipe.transcode() in Python and, but for streams, "
      "gpus and on_gpu_error, of a stream in vpipe run's config: 'vpipe options' and "
      "docs/OPTIONS.md list the keys.");
}

void add_bench(Cli& cli) {
  auto* c = &cli;
  auto& app = c->app;
  auto* bench = c->bench =
      app.add_subcommand("bench", "measure vpipe on this machine (needs a CUDA device)");
  bench->require_subcommand(1);
  auto& mopts = c->mopts;
  auto* bmem = c->bmem = bench->add_subcommand(
      "mem",
      "memory strategies: allocation latency, per-frame loop, pool release threshold, "
      "staging bandwidth, fragmentation under a budget (markdown tables on stdout)");
  bmem->add_flag("--quick", mopts.quick, "fewer iterations: a smoke run, not for results");
  bmem->add_option("--budget-gib", mopts.budget_gib, "device budget of the fragmentation scenarios")
      ->check(CLI::Range(0.25, 64.0))
      ->capture_default_str();
  bmem->add_option("--json", mopts.json_path, "write every figure as JSON");
  bmem->add_option("--log", mopts.log_path, "write scenario (a)'s allocation log (CSV)");
  bmem->add_option("--only", mopts.only, "one section")
      ->check(CLI::IsMember(
          {"latency", "frames", "threshold", "staging", "fragmentation", "contention"}));
  auto& kopts = c->kopts;
  auto* bkern = c->bkern =
      bench->add_subcommand("kernels",
                            "CUDA filter kernels: µs and GB/s vs a device copy, 1080p and 4K "
                            "(exit 1 when a kernel misses its bandwidth goal)");
  bkern->add_flag("--quick", kopts.quick, "fewer runs");
  bkern->add_flag("--once", kopts.once,
                  "run each kernel once, without warm-up: for a profiler, e.g. "
                  "ncu -k regex:sobel vpipe bench kernels --once");
  bkern->add_option("--json", kopts.json_path, "write every figure as JSON");
  auto& replay_log = c->replay_log;
  auto& replay_mem = c->replay_mem;
  auto& replay_budget = c->replay_budget;
  auto* breplay = c->breplay = bench->add_subcommand(
      "replay", "replay an allocation log (from bench mem --log) against memory strategies");
  breplay->add_option("log", replay_log, "the CSV log")->required();
  breplay->add_option("--mem", replay_mem, "all, or one of naive, pool, pool-release0, vmm, slab")
      ->capture_default_str();
  breplay->add_option("--budget-gib", replay_budget, "device budget (0: none)");
  auto& popts = c->popts;
  auto* bpipe = c->bpipe = bench->add_subcommand(
      "pipeline",
      "transcode throughput per decoder × --mem × --host: decode-only, no-encoder, "
      "end-to-end, and libx264 encode-only (markdown table on stdout)");
  bpipe->add_option("input", popts.input, "input video (e.g. 1080p H.264)")->required();
  bpipe->add_option("--vf", popts.filters, "filter chain")->capture_default_str();
  bpipe->add_option("--decode", popts.decoders, "decoders to compare")
      ->check(CLI::IsMember({"cpu", "nvdec"}))
      ->delimiter(',');
  bpipe->add_option("--mem", popts.mems, "memory strategies to compare")
      ->check(CLI::IsMember(vpipe::strategy_names()))
      ->delimiter(',');
  bpipe->add_option("--host", popts.hosts, "host staging modes to compare")
      ->check(CLI::IsMember({"pinned", "pageable"}))
      ->delimiter(',');
  bpipe
      ->add_option("--download", popts.downloads,
                   "slot: the encoder reads the download's staging slot; copy: the slot is "
                   "copied into a fresh frame first (A/B)")
      ->check(CLI::IsMember({"slot", "copy"}))
      ->delimiter(',');
  bpipe->add_option("--loop", popts.loop, "read the input N times over per run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  bpipe->add_option("--preset", popts.preset, "libx264 preset")->capture_default_str();
  bpipe->add_option("--json", popts.json_path, "write every run's report as JSON");
  add_quick(bpipe, c->quick);
  bpipe->add_option("--device", popts.device, "cuda, or cpu for one CPU-path row")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

void add_bench_decode(Cli& cli) {
  auto& d = cli.dopts;
  auto* b = cli.bdec = cli.bench->add_subcommand(
      "decode",
      "the machine's raw decode rate with 1…K sessions (packets from memory, frames dropped), "
      "and in the same run vpipe's --streams N and --decode-sessions K pipelines as fractions "
      "of it, start-up excluded, with NVML's decoder utilisation (markdown on stdout)");
  b->add_option("input", d.input, "input video (e.g. 1080p H.264 with regular keyframes)")
      ->required();
  b->add_option("--sessions", d.sessions, "raw probe: decoder sessions, one thread each")
      ->check(CLI::Range(1, 64))
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--streams", d.streams, "pipelines: transcode --streams N to null")
      ->check(CLI::Range(1, 256))
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--segments", d.segments, "one file: transcode --decode-sessions K to null")
      ->check(CLI::Range(1, 64))
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--vf", d.filters, "the pipelines' filter chain")->capture_default_str();
  b->add_option("--decode", d.decode, "nvdec, or cpu (libavcodec; runs without a GPU)")
      ->check(CLI::IsMember({"cpu", "nvdec"}))
      ->capture_default_str();
  b->add_option("--mem", d.mem, "the pipelines' memory strategy")
      ->check(CLI::IsMember(vpipe::strategy_names()))
      ->capture_default_str();
  b->add_option("--loop", d.loop, "read the input N times over per run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  b->add_option("--encoder", d.encoder,
                "also encode the one file with this encoder (e.g. mpeg4, libx264) for each "
                "--segments K, beside the encoder alone and decode without it");
  b->add_option("--json", d.json_path, "write every row as JSON");
  add_quick(b, cli.quick);
}

void add_bench_encode(Cli& cli) {
  auto& o = cli.eopts;
  auto* b = cli.benc = cli.bench->add_subcommand(
      "encode",
      "one encoder with every thread against K encoders, each on a GOP-aligned segment of the "
      "frames with its share of the threads, joined into one stream; each output decoded back "
      "and its timestamps checked against the one encoder's (frames from memory; markdown on "
      "stdout)");
  b->add_option("input", o.input, "input video")->required();
  b->add_option("--vf", o.filters, "the chain whose output is encoded")->capture_default_str();
  b->add_option("--decode", o.decode, "cpu or nvdec (collecting the frames, not timed)")
      ->check(CLI::IsMember({"cpu", "nvdec"}))
      ->capture_default_str();
  b->add_option("--encoder", o.encoder, "the encoder (libx264, mpeg4, …)")->capture_default_str();
  b->add_option("--preset", o.preset, "libx264 preset")->capture_default_str();
  b->add_option("--segments", o.segments, "encoders K, each on its own segments")
      ->check(CLI::Range(1, 64))
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--gop", o.gop, "keyframe interval of every output; segments start on it")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  b->add_option("--loop", o.loop, "read the input N times over")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  b->add_option("--repeat", o.repeat, "measure every K this many times, in turn")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  b->add_option("--out-dir", o.out_dir, "keep the outputs here (default: removed)");
  b->add_option("--json", o.json_path, "write every row as JSON");
  add_quick(b, cli.quick);
}

void add_bench_chain(Cli& cli) {
  auto& o = cli.copts;
  auto* b = cli.bchain = cli.bench->add_subcommand(
      "chain",
      "each filter chain's CUDA filters as a stage and launches per filter (--graphs off) "
      "against one CUDA Graph per frame (--graphs on), side by side, with 1…N streams "
      "sharing the GPU: steady fps, the CUDA stages' µs in process() and GPU µs per frame, and "
      "the busiest stage (markdown on stdout)");
  b->add_option("input", o.input, "input video")->required();
  b->add_option("--vf", o.chains, "a chain to measure (repeatable)")->capture_default_str();
  b->add_option("--streams", o.streams, "streams sharing the GPU")
      ->check(CLI::Range(1, 256))
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--decode", o.decode, "nvdec or cpu")
      ->check(CLI::IsMember({"cpu", "nvdec"}))
      ->capture_default_str();
  b->add_option("--mem", o.mem, "memory strategy")
      ->check(CLI::IsMember(vpipe::strategy_names()))
      ->capture_default_str();
  b->add_option("--loop", o.loop, "read the input N times over per run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  b->add_option("--repeat", o.repeat, "each row N times, the modes alternating")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  b->add_option("--json", o.json_path, "write every row as JSON");
  add_quick(b, cli.quick);
}

void add_bench_headroom(Cli& cli) {
  auto& h = cli.hopts;
  auto* b = cli.bhead = cli.bench->add_subcommand(
      "headroom",
      "the smallest budget each memory strategy runs each soak workload under with no "
      "failed allocation (bisection), as a multiple of the workload's live set");
  b->add_option("--workload", h.workloads, "workloads to measure")
      ->check(CLI::IsMember({"constant", "ladder", "roi", "burst"}))
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--mem", h.strategies, "strategies to measure")
      ->check(CLI::IsMember(vpipe::strategy_names()))
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--probe", cli.head_probe, "each probe's soak: seconds, or with a unit (90s, 5m)")
      ->capture_default_str();
  b->add_option("--low", h.low, "the search range's low end, × the live set")
      ->check(CLI::Range(0.1, 100.0))
      ->capture_default_str();
  b->add_option("--high", h.high, "the search range's high end, × the live set")
      ->check(CLI::Range(0.1, 100.0))
      ->capture_default_str();
  b->add_option("--steps", h.steps, "bisection steps between the ends")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  b->add_option("--vf", h.soak.filters, "filter chain of the soak")->capture_default_str();
  b->add_option("--size", cli.head_size, "source frame size WxH")->capture_default_str();
  b->add_option("--json", h.json_path, "write every probe as JSON");
  add_quick(b, cli.quick);
}

// soak's verdict thresholds.
void add_soak_verdict(CLI::App* soak, Cli& c) {
  soak->add_option("--max-growth", c.max_growth_pct,
                   "verdict: % growth of reserved device memory (CPU: RSS) after warm-up")
      ->capture_default_str();
  soak->add_option("--max-drift", c.max_drift_pct,
                   "verdict: % rise of p99 latency, last third vs first third after warm-up")
      ->capture_default_str();
  soak->add_option("--max-rss-growth", c.max_rss_growth_pct,
                   "verdict: % growth of the host's RSS after warm-up (device runs; a host leak "
                   "fails like a device one)")
      ->capture_default_str();
  soak->add_option("--warmup", c.warmup_pct, "verdict: % of the samples ignored at the start")
      ->check(CLI::Range(0.0, 90.0))
      ->capture_default_str();
}

void add_soak(Cli& cli) {
  auto* c = &cli;
  auto& app = c->app;
  auto& sopts = c->sopts;
  auto& soak_mem = c->soak_mem;
  auto& soak_compare = c->soak_compare;
  auto& soak_duration = c->soak_duration;
  auto& soak_budget = c->soak_budget;
  auto& soak_frames = c->soak_frames;
  auto& metrics_port = c->metrics_port;
  auto& metrics_address = c->metrics_address;
  auto* soak = c->soak = app.add_subcommand(
      "soak",
      "run a workload for a long time per memory strategy, sampling fps, latency, device "
      "memory, fragmentation, failures; CSV/JSON/PNG/HTML out; non-zero exit (3) when "
      "memory grows, latency drifts or an allocation fails");
  soak->add_option("--mem", soak_mem, "the strategy to soak")
      ->check(CLI::IsMember(vpipe::strategy_names()))
      ->capture_default_str();
  soak->add_option("--compare", soak_compare,
                   "several strategies, one after the other, same workload and seed: e.g. "
                   "naive,pool,vmm,slab,graph");
  soak->add_option("--gpus", c->soak_gpus,
                   "run every strategy on each of these GPUs, the GPUs at once (all, a count, or a "
                   "list such as 0,1); each run has its own strategy and budget on its GPU, and "
                   "is named STRATEGY@gpuN in the outputs");
  soak->add_flag("--parallel", sopts.parallel,
                 "run the --compare strategies at the same time, sharing the GPU (tenants of one "
                 "device), instead of one after the other");
  soak->add_option("--workload", sopts.workload,
                   "constant | ladder (1, 3/4, 1/2, 1/3 of --size, switching every --ladder-every "
                   "frames) | roi (random regions) | burst (extra frames held in spikes)")
      ->check(CLI::IsMember({"constant", "ladder", "roi", "burst"}))
      ->capture_default_str();
  soak->add_option("--duration", soak_duration,
                   "per strategy: seconds, or with a unit: 90s, 20m, 2h");
  soak->add_option("--frames", soak_frames, "per strategy: stop after N frames")
      ->check(kPositiveCount);
  soak->add_option("--interval", sopts.interval_s, "seconds between samples")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  soak->add_option("--probe-interval", sopts.probe_interval_s,
                   "seconds between largest-block probes of the device (0: never); each probe's "
                   "time is in the samples (probe_ms) and left out of the frames' latency")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  soak->add_option("--probe-max", c->soak_probe_max,
                   "the probe's search ceiling without --budget, e.g. 1G, 4G: a search up to a "
                   "big GPU's free memory stalls every stream for seconds")
      ->capture_default_str();
  soak->add_option("--budget", soak_budget,
                   "device memory cap per strategy, e.g. 1.5G, 800M (emulates a shared GPU)");
  auto& soak_size = c->soak_size;
  soak->add_option("--size", soak_size, "source frame size WxH (the ladder's top rung)")
      ->capture_default_str();
  soak->add_option("--vf", sopts.filters, "filter chain")->capture_default_str();
  soak->add_option("--device", sopts.device, "cuda, cpu or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  soak->add_option("--host", sopts.host, "download staging: pinned or pageable")
      ->check(CLI::IsMember({"pinned", "pageable"}))
      ->capture_default_str();
  soak->add_option("--ladder-every", sopts.ladder_every, "ladder: frames per rung")
      ->check(kPositiveCount)
      ->capture_default_str();
  soak->add_option("--fps", sopts.fps, "pace the source (0: full speed)")->capture_default_str();
  soak->add_option("--seed", sopts.seed, "random seed (roi workload)")->capture_default_str();
  auto& rejudge = c->rejudge;
  soak->add_option("--rejudge", rejudge,
                   "judge a finished soak's soak.json again with these --max-growth, --max-drift "
                   "and --warmup (runs nothing)");
  soak->add_option("--out", sopts.out_dir,
                   "write samples.csv, soak.json, *.png and report.html here");
  add_metrics_options(soak, metrics_port, metrics_address);
  add_soak_verdict(soak, *c);
}

}  // namespace

namespace {
void parse_size(const std::string& text, int& width, int& height) {
  char tail = 0;
  if (std::sscanf(text.c_str(), "%dx%d%c", &width, &height, &tail) != 2 || width < 2 ||
      height < 2 || width > 16384 || height > 16384)
    throw vpipe::usage_error(
        fmt::format("--size {}: expected WxH from 2x2 to 16384x16384, e.g. 1920x1080", text));
}
}  // namespace

// --gpus text → device indices, against the devices visible now.
std::vector<int> gpus_of(const std::string& text) {
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  try {
    return vpipe::parse_gpus(text, visible);
  } catch (const vpipe::usage_error& e) {
    throw vpipe::usage_error(fmt::format("--gpus {}", e.what()));
  }
}

namespace {
// What --quick means for each bench that takes an input; an option given explicitly stays.
void apply_quick(Cli& c) {
  if (!c.quick) return;
  const auto unset = [](CLI::App* app, const char* flag) { return app->count(flag) == 0; };
  if (c.bpipe->parsed() && unset(c.bpipe, "--host")) c.popts.hosts = {"pinned"};
  if (c.bdec->parsed()) {
    if (unset(c.bdec, "--sessions")) c.dopts.sessions = {1, 2};
    if (unset(c.bdec, "--streams")) c.dopts.streams = {1, 2};
    if (unset(c.bdec, "--segments")) c.dopts.segments = {1, 2};
  }
  if (c.bchain->parsed() && unset(c.bchain, "--streams")) c.copts.streams = {1};
  if (c.benc->parsed() && unset(c.benc, "--segments")) c.eopts.segments = {1, 2};
  if (c.bhead->parsed()) {
    if (unset(c.bhead, "--workload")) c.hopts.workloads = {"constant"};
    if (unset(c.bhead, "--probe")) c.head_probe = "1s";
    if (unset(c.bhead, "--steps")) c.hopts.steps = 0;
  }
}
}  // namespace

namespace {
// The transcode flags given, each set through its schema row; errors name the flag.
void set_transcode_options(Cli& c) {
  for (const auto& s : vpipe::option_schema()) {
    const auto given = c.tc_given.find(s.key);
    if (given == c.tc_given.end()) continue;
    for (const auto& value : given->second) {
      try {
        s.set(c.topts, value);
      } catch (const vpipe::usage_error& e) {
        throw vpipe::usage_error(fmt::format("{}{}", s.flag, e.what()));  // "--crf 99: outside"
      }
    }
  }
}
}  // namespace

void finish(Cli& c) {
  apply_quick(c);
  if (c.tc->parsed()) set_transcode_options(c);
  if (!c.run_gpus_text.empty()) c.run_gpus = gpus_of(c.run_gpus_text);
  if (c.bhead->parsed()) {
    c.hopts.probe_s = vpipe::parse_duration(c.head_probe, "--probe");
    if (c.hopts.low >= c.hopts.high)
      throw vpipe::usage_error(
          fmt::format("--low {} must be below --high {}", c.hopts.low, c.hopts.high));
    parse_size(c.head_size, c.hopts.soak.width, c.hopts.soak.height);
  }
  if (!c.soak->parsed()) return;
  auto& o = c.sopts;
  o.strategies =
      c.soak_compare.empty() ? std::vector<std::string>{c.soak_mem} : split_list(c.soak_compare);
  if (!c.soak_duration.empty()) o.duration_s = vpipe::parse_duration(c.soak_duration, "--duration");
  if (c.soak_frames > 0) o.frames = c.soak_frames;
  if (!c.soak_budget.empty()) o.budget = vpipe::parse_bytes(c.soak_budget, "--budget");
  if (!c.soak_gpus.empty()) o.gpus = gpus_of(c.soak_gpus);
  parse_size(c.soak_size, o.width, o.height);
  o.probe_max = vpipe::parse_bytes(c.soak_probe_max, "--probe-max");
  o.thresholds = {c.warmup_pct / 100, c.max_growth_pct / 100, c.max_drift_pct / 100,
                  c.max_rss_growth_pct / 100};
}

}  // namespace vpipe::cli
