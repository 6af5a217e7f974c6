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

// "90", "90s", "20m", "2h" → seconds.
double parse_duration(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (end == s.c_str() || mult < 0 || !(v > 0) || !(v * mult < 1e9))
    throw vpipe::usage_error(fmt::format("--duration {}: expected seconds or 90s, 20m, 2h", s));
  return v * mult;
}

// "1.5G", "800M", "1048576" → bytes.
std::size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit.empty()  ? 1
                      : unit == "K" ? 1024.0
                      : unit == "M" ? 1024.0 * 1024
                      : unit == "G" ? 1024.0 * 1024 * 1024
                                    : -1;
  if (end == s.c_str() || mult < 0 || !(v > 0) || !(v * mult < 1e15))
    throw vpipe::usage_error(fmt::format("--budget {}: expected bytes or 800M, 1.5G", s));
  return static_cast<std::size_t>(v * mult);
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

void add_live_input(CLI::App* tc, vpipe::TranscodeOptions& topts);
void add_streams_and_gpus(CLI::App* tc, Cli& c);
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
      "Keys per stream: input, output, vf, device, decode, mem, encoder, crf, preset, realtime, "
      "loop,\n"
      "frames, restart, restart_on_end (default: live inputs), skip_done, budget_bytes, "
      "stall_timeout_s.\n"
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
  add_run(*c);
  return c;
}

namespace {

// transcode's options for live inputs: stalls, reconnects, FFmpeg's input
// options, glass-to-glass stamps.
void add_live_input(CLI::App* tc, vpipe::TranscodeOptions& topts) {
  tc->add_option("--stall-timeout", topts.stall_timeout_s,
                 "live input (udp://, rtp://, srt://, rtsp://, rtmp://, tcp://): seconds without "
                 "data before the input counts as stalled: the output is finalized, or the input "
                 "reopened (see --reconnect)")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  tc->add_option("--reconnect", topts.reconnect,
                 "live input with a connection (rtsp, srt, rtmp, tcp): times to reopen it after a "
                 "stall or a dropped connection (0: never)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  tc->add_option("--input-option", topts.input_options,
                 "key=value passed to FFmpeg when opening the input (repeatable), e.g. "
                 "rtsp_transport=tcp, or localaddr=… for udp");
  tc->add_flag("--read-stamps", topts.read_stamps,
               "read the time a sender's 'stamp' filter wrote into each picture: glass-to-glass "
               "latency (p50/p99/max) in the report");
}

// --streams, --gpus and --budget: how many pipelines, on which GPUs, under what cap.
void add_streams_and_gpus(CLI::App* tc, Cli& c) {
  tc->add_option(
        "--gpus", c.gpus_text,
        "the GPUs the streams are placed on, by headroom: all, a count (2: the first two), or "
        "a list (0,1; '1,' is device 1 alone); each GPU has its own --mem strategy and --budget")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("--gpus: empty") : std::string();
      });
  tc->add_option(
        "--streams", c.streams,
        "run N copies of the pipeline at once in this process, sharing one device memory "
        "strategy per GPU (outputs OUT-1, OUT-2…; null writes nothing); statistics per stream")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  tc->add_option("--budget", c.tc_budget,
                 "CUDA path: cap the strategy's device memory, e.g. 512M, 2G (a shared GPU); out "
                 "of memory trims and retries twice, then fails with a report");
  add_enum(tc, "--on-gpu-error", c.topts.on_gpu_error,
           "several streams: a stream that fails with a CUDA error on its GPU (out of memory "
           "after the retries, a device fault) stops (fail), or starts again from the beginning "
           "on the GPU with the most headroom, that GPU taking no more streams (move; the report "
           "notes each move); other streams never stop");
}

// --encoder, --crf, --preset, --qscale, --gop: what writes OUT.
void add_encoder_options(CLI::App* tc, vpipe::TranscodeOptions& topts) {
  tc->add_option("--encoder", topts.encoder,
                 "auto (h264_nvenc where the GPU has NVENC, else libx264; the report says "
                 "which and why), libx264, mpeg4, ffv1 (.mkv) or another FFmpeg encoder")
      ->capture_default_str();
  tc->add_option("--crf", topts.crf, "libx264 quality: 0 lossless … 51 worst")
      ->check(CLI::Range(0, 51))
      ->capture_default_str();
  tc->add_option("--preset", topts.preset, "libx264 preset: ultrafast … veryslow")
      ->capture_default_str();
  tc->add_option("--qscale", topts.qscale, "mpeg4 quantizer: 2 best … 31")
      ->check(CLI::Range(2, 31))
      ->capture_default_str();
  tc->add_option("--gop", topts.gop,
                 "at most N frames from one keyframe to the next (0: the encoder's default; "
                 "short GOPs seek faster and let --decode-sessions split the file finer)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  tc->add_option("--encode-threads", topts.encode_threads,
                 "video encoder threads (0: the encoder chooses)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  tc->add_option("--encode-segments", topts.encode_segments,
                 "encode the output with K encoders at once, each on a segment of --gop frames "
                 "(default 60) with its share of the cores, joined in order into one stream: "
                 "for a CPU encoder that does not use every core (libx264 at 720p); holds K + 1 "
                 "segments of frames in memory; files only")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
}

// --loop, --queue-depth, --decode-threads, --decode-sessions: how IN is read and decoded.
void add_reading_options(CLI::App* tc, vpipe::TranscodeOptions& topts, std::string& sessions) {
  tc->add_option("--loop", topts.loop, "read the input N times over, timestamps continuing")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  tc->add_option("--queue-depth", topts.queue_depth, "frames in flight between two stages")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  tc->add_option("--decode-threads", topts.decode_threads, "decoder threads (0: automatic)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  tc->add_option(
        "--decode-sessions", sessions,
        "decode one input with N decoder sessions at once, each a segment (GOP) between "
        "keyframes, frames put back in order (NVDEC: one session per engine, up to 7 on an "
        "H200); an open GOP is decoded with the one before it; keyframes further apart than "
        "a segment's limit fall back to one session. auto: 4 with NVDEC when its engines are "
        "less than half busy (NVML), else 1")
      ->check([](const std::string& v) {
        int n = 0;
        return v == "auto" || (CLI::detail::lexical_cast(v, n) && n >= 1 && n <= 64)
                   ? std::string()
                   : std::string("auto, or 1 to 64");
      })
      ->capture_default_str();
}

void add_transcode(Cli& cli) {
  auto* c = &cli;
  auto& app = c->app;
  auto& topts = c->topts;
  auto& report_path = c->report_path;
  auto& frames = c->frames;
  auto* tc = c->tc =
      app.add_subcommand("transcode", "decode IN, run the filter chain, encode OUT (audio copied)");
  tc->add_option("input", topts.input,
                 "input file or URL (anything FFmpeg reads; udp://, rtp://, srt://, rtsp://, "
                 "rtmp://, tcp:// are live: low-latency open, stall timeout, frames dropped when "
                 "behind)")
      ->required();
  tc->add_option("output", topts.output,
                 "output file (the extension picks the container), udp://HOST:PORT, srt://… or "
                 "rtp://… (MPEG-TS), or null: write nothing (no encoder; measures decode and "
                 "filters)")
      ->required();
  tc->add_option("--vf", topts.filters,
                 "filter chain, e.g. \"resize=1280x720,blur=sigma=1.5\" (see 'vpipe filters')");
  add_enum(tc, "--device", topts.device,
           "cpu, cuda or auto (auto: the CUDA path where a CUDA device is usable)");
  add_enum(tc, "--decode", topts.decode,
           "cpu (libavcodec threads), nvdec (FFmpeg's cuda hwaccel; frames stay on the "
           "device) or auto (nvdec when the chain starts with a CUDA filter)");
  tc->add_option("--mem", topts.mem,
                 "CUDA path: device memory per frame: naive (cudaMalloc/cudaFree), pool "
                 "(cudaMallocAsync pool), pool-release0, vmm (virtual memory arena), slab "
                 "(recycled fixed blocks), graph (a CUDA Graph memory node per buffer); see README "
                 "'Which memory strategy when'")
      ->check(CLI::IsMember(vpipe::strategy_names()))
      ->capture_default_str();
  add_enum(tc, "--host", topts.host,
           "CUDA path: host staging: pinned (cudaHostAlloc ring) or pageable");
  tc->add_option("--graphs", topts.graphs,
                 "CUDA path: on: each run of CUDA filters is one stage that launches one CUDA "
                 "Graph per frame (captured once per frame size; intermediate buffers are graph "
                 "memory nodes); off: a stage and kernel launches per filter")
      ->transform(CLI::IsMember({"on", "off"}))
      ->default_str("off");
  add_encoder_options(tc, topts);
  tc->add_option("--frames", frames, "stop after N video frames")->check(kPositiveCount);
  add_enum(tc, "--fit", topts.fit,
           "a picture size the encoder cannot take (odd, for 4:2:0): pad (repeat the last "
           "column/row), crop (drop it) or error");
  add_enum(tc, "--drop", topts.drop,
           "when a stage falls behind: block (wait; nothing lost), drop-oldest or "
           "drop-newest (lose a frame, counted per queue; latency stays bounded); auto: "
           "block for files, drop-newest for live inputs");
  tc->add_option("--max-in-flight", topts.max_in_flight,
                 "at most N frames between the decoder and the output (0: only the queues bound "
                 "them); at the limit the decoder waits (--drop block) or drops the new frame, "
                 "counted")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  add_live_input(tc, topts);
  add_streams_and_gpus(tc, *c);
  add_reading_options(tc, topts, cli.decode_sessions);
  tc->add_option("--report", report_path, "write a JSON report (frames, fps, latency, stages)");
  add_metrics_options(tc, c->metrics_port, c->metrics_address);
  tc->add_flag("--keep-partial", topts.keep_partial, "keep the output file if the run fails");
  tc->add_flag("--realtime", topts.realtime,
               "read the input no faster than its timestamps (rehearse a live feed with a file)");
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
  return vpipe::parse_gpus(text, visible);
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

void finish(Cli& c) {
  apply_quick(c);
  if (c.frames > 0) c.topts.max_frames = c.frames;
  vpipe::set_option(c.topts, "decode_sessions", c.decode_sessions, "--decode-sessions");
  if (!c.tc_budget.empty()) c.topts.budget = parse_bytes(c.tc_budget);
  if (!c.gpus_text.empty()) c.topts.gpus = gpus_of(c.gpus_text);
  if (!c.run_gpus_text.empty()) c.run_gpus = gpus_of(c.run_gpus_text);
  if (c.bhead->parsed()) {
    c.hopts.probe_s = parse_duration(c.head_probe);
    if (c.hopts.low >= c.hopts.high)
      throw vpipe::usage_error(
          fmt::format("--low {} must be below --high {}", c.hopts.low, c.hopts.high));
    parse_size(c.head_size, c.hopts.soak.width, c.hopts.soak.height);
  }
  if (!c.soak->parsed()) return;
  auto& o = c.sopts;
  o.strategies =
      c.soak_compare.empty() ? std::vector<std::string>{c.soak_mem} : split_list(c.soak_compare);
  if (!c.soak_duration.empty()) o.duration_s = parse_duration(c.soak_duration);
  if (c.soak_frames > 0) o.frames = c.soak_frames;
  if (!c.soak_budget.empty()) o.budget = parse_bytes(c.soak_budget);
  if (!c.soak_gpus.empty()) o.gpus = gpus_of(c.soak_gpus);
  parse_size(c.soak_size, o.width, o.height);
  o.probe_max = parse_bytes(c.soak_probe_max);
  o.thresholds = {c.warmup_pct / 100, c.max_growth_pct / 100, c.max_drift_pct / 100,
                  c.max_rss_growth_pct / 100};
}

}  // namespace vpipe::cli
