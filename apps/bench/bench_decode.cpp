// `vpipe bench decode`: three tables from one process, every rate with its
// start-up excluded (frames after each session's or stream's first 30, over
// the time from then to its last), NVML's decoder utilisation beside each:
//
//   probe     K raw decoder sessions, packets from memory, frames dropped;
//   streams   `transcode --streams N` to null through the filter chain, the
//             sum of the streams' steady rates, as a fraction of the probe
//             with as many sessions (where measured) and of the probe's best;
//   segments  one file with `--decode-sessions K` through the chain, against
//             the first K (1) in the same run, whole-run and steady, and whether
//             every run gave the same timestamps;
//   encoded   (--encoder) the same, encoded into a temporary file, beside the
//             encoder alone and decode without an encoder: the bound it hits.
#include "bench_decode.hpp"

#include <fmt/format.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "bench_encode.hpp"
#include "decode_probe.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/io/nvml_load.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/session/multi_transcode.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe::bench {

namespace {

int current_device(bool gpu) {
  int device = 0;
  if (gpu && cudaGetDevice(&device) != cudaSuccess) device = 0;
  return device;
}

// The process's CPU time over a run (every thread, user and system) as cores
// busy on average: near the machine's cores, the CPU is what bounds the run.
class CpuUse {
 public:
  [[nodiscard]] nlohmann::json stop() const {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return {{"cores_busy", wall > 0 ? (cpu_s() - cpu_) / wall : 0.0},
            {"cores", std::max(1u, std::thread::hardware_concurrency())}};
  }

 private:
  static double cpu_s() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  double cpu_ = cpu_s();
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string cpu_cell(const nlohmann::json& cpu) {
  return fmt::format("{:.1f} of {}", cpu["cores_busy"].get<double>(), cpu["cores"].get<unsigned>());
}

std::string load_cell(const DecoderLoad& l) {
  return l.available ? fmt::format("{:.0f} / {:.0f}", l.mean_pct, l.max_pct) : "—";
}

TranscodeOptions pipeline_options(const DecodeBenchOptions& b) {
  TranscodeOptions o;
  o.input = b.input;
  o.output = "null";
  o.filters = b.filters;
  o.decode = from_name<Decode>(b.decode, "decode");
  o.mem = from_name<Strategy>(b.mem, "mem");
  o.loop = b.loop;
  o.decode_threads = b.decode_threads;
  o.nvdec_api = from_name<NvdecApi>(b.nvdec_api, "nvdec-api");
  return o;
}

// --decode-sessions K as the tables and the JSON give it: a number, or "auto".
nlohmann::json sessions_json(int k) {
  return k == TranscodeOptions::kAutoSessions ? nlohmann::json("auto") : nlohmann::json(k);
}

struct ProbeTable {
  nlohmann::json rows = nlohmann::json::array();
  std::map<int, double> steady_by_sessions;
  double best = 0;
};

ProbeTable probe_rows(const DecodeBenchOptions& b, bool gpu) {
  ProbeTable t;
  fmt::print(
      "## Raw decode probe ({}; packets from memory, no filters)\n\n"
      "| sessions | frames | steady fps | whole fps | slowest session fps | errors | "
      "NVDEC load mean / max % | CPU cores busy |\n|---|---|---|---|---|---|---|---|\n",
      b.raw ? "NVCUVID directly: NVIDIA's parser and decoder, each frame mapped and unmapped"
            : b.decode + " through FFmpeg");
  for (const int k : b.sessions) {
    DecoderLoadSampler sampler(current_device(gpu));
    const CpuUse cpu_use;
    const auto r =
        probe_decode({b.input, k, from_name<Decode>(b.decode, "decode"), b.loop, b.decode_threads,
                      from_name<NvdecApi>(b.nvdec_api, "nvdec-api"), b.raw});
    const nlohmann::json cpu = cpu_use.stop();
    const DecoderLoad load = sampler.stop();
    const double slowest =
        r.session_fps.empty() ? 0 : *std::min_element(r.session_fps.begin(), r.session_fps.end());
    fmt::print("| {} | {} | {:.0f} | {:.0f} | {:.0f} | {} | {} | {} |\n", k, r.frames, r.steady_fps,
               r.fps, slowest, r.errors, load_cell(load), cpu_cell(cpu));
    std::fflush(stdout);
    t.steady_by_sessions[k] = r.steady_fps;
    t.best = std::max(t.best, r.steady_fps);
    auto row = r.to_json();
    row["decoder_load"] = load.to_json();
    row["cpu"] = cpu;
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The NVDEC APIs the streams of `r` decoded with ("cuvid", "hwaccel"; none without NVDEC).
nlohmann::json apis_of(const MultiTranscodeReport& r) {
  std::set<std::string> apis;
  for (const auto& s : r.streams)
    if (s.memory && s.memory->nvdec_pool) apis.insert(s.memory->nvdec_pool->api);
  return apis;
}

nlohmann::json stream_rows(const DecodeBenchOptions& b, const ProbeTable& probe, bool gpu) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print(
      "\n## vpipe --streams N (decode {}, --vf {}, --mem {}, output null)\n\n"
      "| streams | frames | steady fps (sum) | whole fps | ÷ probe, same sessions | "
      "÷ probe's best | failed | NVDEC load mean / max % | CPU cores busy |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      b.decode, b.filters, b.mem);
  for (const int n : b.streams) {
    DecoderLoadSampler sampler(current_device(gpu));
    TranscodeOptions o = pipeline_options(b);
    o.streams = n;
    const CpuUse cpu_use;
    const auto r = transcode_streams(o);
    const nlohmann::json cpu = cpu_use.stop();
    const DecoderLoad load = sampler.stop();
    double steady = 0;
    for (const auto& s : r.streams) steady += s.steady_fps;
    const auto same = probe.steady_by_sessions.find(n);
    const double vs_same =
        same != probe.steady_by_sessions.end() && same->second > 0 ? steady / same->second : 0;
    const double vs_best = probe.best > 0 ? steady / probe.best : 0;
    const auto failed = std::count_if(r.failures.begin(), r.failures.end(),
                                      [](const std::string& f) { return !f.empty(); });
    fmt::print("| {} | {} | {:.0f} | {:.0f} | {} | {:.2f} | {} | {} | {} |\n", n,
               r.frames_written(), steady, r.fps_total(),
               vs_same > 0 ? fmt::format("{:.2f}", vs_same) : "—", vs_best, failed, load_cell(load),
               cpu_cell(cpu));
    std::fflush(stdout);
    rows.push_back({{"streams", n},
                    {"frames", r.frames_written()},
                    {"steady_fps", steady},
                    {"fps", r.fps_total()},
                    {"wall_s", r.wall_s},
                    {"fraction_of_probe_same_sessions",
                     vs_same > 0 ? nlohmann::json(vs_same) : nlohmann::json(nullptr)},
                    {"fraction_of_probe_best", vs_best},
                    {"failed", failed},
                    {"nvdec_api", apis_of(r)},
                    {"decoder_load", load.to_json()},
                    {"cpu", cpu}});
  }
  return rows;
}

nlohmann::json segment_rows(const DecodeBenchOptions& b, bool gpu) {
  nlohmann::json rows = nlohmann::json::array();
  fmt::print(
      "\n## One file, --decode-sessions K (decode {}, --vf {}, output null)\n\n"
      "| sessions | frames | steady fps | whole fps | ÷ 1 session, whole / steady | same pts as 1 "
      "| decoder note | NVDEC load mean / max % |\n|---|---|---|---|---|---|---|---|\n",
      b.decode, b.filters);
  double one_whole = 0, one_steady = 0;
  std::vector<std::int64_t> first_pts;
  for (const int k : b.segments) {
    TranscodeOptions o = pipeline_options(b);
    o.decode_sessions = k;
    std::vector<std::int64_t> pts;
    RunHooks hooks;
    hooks.on_frame = [&](const Frame& f) { pts.push_back(f.pts); };
    DecoderLoadSampler sampler(current_device(gpu));
    const CpuUse cpu_use;
    const auto r = transcode(o, hooks);
    const nlohmann::json cpu = cpu_use.stop();
    const DecoderLoad load = sampler.stop();
    if (first_pts.empty()) first_pts = pts;
    if (one_whole == 0) {
      one_whole = r.fps;
      one_steady = r.steady_fps;
    }
    // Segments come out in bursts, so "steady" (from the 30th frame out) can
    // start late in a short run: the whole-run ratio is the one to quote.
    const double whole_ratio = one_whole > 0 ? r.fps / one_whole : 0;
    const double steady_ratio = one_steady > 0 ? r.steady_fps / one_steady : 0;
    const bool same = pts == first_pts;
    std::string note;
    for (const auto& n : r.notes)
      if (n.rfind("decode: ", 0) == 0) note = n.substr(8);
    fmt::print("| {} | {} | {:.0f} | {:.0f} | {:.2f} / {:.2f} | {} | {} | {} |\n",
               k == TranscodeOptions::kAutoSessions ? std::string("auto") : std::to_string(k),
               r.video_packets_written, r.steady_fps, r.fps, whole_ratio, steady_ratio,
               same ? "yes" : "NO", note.empty() ? "one decoder" : note, load_cell(load));
    std::fflush(stdout);
    rows.push_back({{"decode_sessions", sessions_json(k)},
                    {"frames", r.video_packets_written},
                    {"steady_fps", r.steady_fps},
                    {"fps", r.fps},
                    {"whole_ratio_to_first", whole_ratio},
                    {"steady_ratio_to_first", steady_ratio},
                    {"same_timestamps_as_first", same},
                    {"decode_errors", r.decode_errors},
                    {"note", note},
                    {"decoder_load", load.to_json()},
                    {"cpu", cpu}});
  }
  return rows;
}

// One file with --decode-sessions K through the chain and `encoder` into a
// temporary file, beside its bounds measured in the same run: the encoder
// alone (frames from memory) and the same K without an encoder.
nlohmann::json encode_rows(const DecodeBenchOptions& b, const nlohmann::json& no_encoder) {
  std::int64_t enc_frames = 0;
  const double alone = encode_only_fps(pipeline_options(b), b.encoder, &enc_frames);
  const auto tmp =
      std::filesystem::temp_directory_path() / fmt::format("vpipe_bench_decode_{}.mkv", ::getpid());
  fmt::print(
      "\n## One file, --decode-sessions K, encoded with {} (the encoder alone: {:.0f} fps over "
      "{} frames)\n\n| sessions | frames | whole fps | steady fps | decode + filters fps, no "
      "encoder | bound | ÷ bound |\n|---|---|---|---|---|---|---|\n",
      b.encoder, alone, enc_frames);
  nlohmann::json rows = nlohmann::json::array();
  for (const int k : b.segments) {
    TranscodeOptions o = pipeline_options(b);
    o.decode_sessions = k;
    o.output = tmp.string();
    o.encoder = b.encoder;
    const auto r = transcode(o);
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    double decode = 0;
    for (const auto& row : no_encoder)
      if (row["decode_sessions"] == sessions_json(k)) decode = row["fps"].get<double>();
    const bool encoder_bound = decode <= 0 || alone < decode;
    const double bound = encoder_bound ? alone : decode;
    fmt::print("| {} | {} | {:.0f} | {:.0f} | {:.0f} | {} ({:.0f} fps) | {:.2f} |\n", k,
               r.video_packets_written, r.fps, r.steady_fps, decode,
               encoder_bound ? "the encoder" : "decode + filters", bound, r.fps / bound);
    std::fflush(stdout);
    rows.push_back({{"decode_sessions", sessions_json(k)},
                    {"frames", r.video_packets_written},
                    {"fps", r.fps},
                    {"steady_fps", r.steady_fps},
                    {"no_encoder_fps", decode},
                    {"bound", encoder_bound ? "encoder" : "decode"},
                    {"bound_fps", bound},
                    {"fraction_of_bound", r.fps / bound}});
  }
  return nlohmann::json{{"encoder", b.encoder},
                        {"encoder_alone_fps", alone},
                        {"encoder_alone_frames", enc_frames},
                        {"rows", rows}};
}

// The input's video frames as its container states them (0: not stated).
std::int64_t stated_frames(const std::string& input) {
  const auto in = open_input(input);  // a bad input fails here, before any table starts
  const int v = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (v < 0) return 0;
  const AVStream* st = in->streams[v];
  if (st->nb_frames > 0) return st->nb_frames;
  const AVRational rate = av_guess_frame_rate(in.get(), const_cast<AVStream*>(st), nullptr);
  if (in->duration <= 0 || rate.num <= 0) return 0;
  return static_cast<std::int64_t>(static_cast<double>(in->duration) / AV_TIME_BASE * av_q2d(rate));
}

}  // namespace

int run_decode_bench(const DecodeBenchOptions& options) {
  vpipe::check_side_file(options.json_path, "--json", options.input, "null");
  // A steady rate needs frames after each run's first 30: a short clip (20
  // frames gave "38,048 fps, 265×", the first frames' rate) is looped until a
  // run has kMinFrames, and the table says so.
  constexpr std::int64_t kMinFrames = 300;
  DecodeBenchOptions b = options;
  if (const std::int64_t frames = stated_frames(b.input);
      frames > 0 && frames * b.loop < kMinFrames) {
    b.loop = static_cast<int>((kMinFrames + frames - 1) / frames);
    fmt::print(stderr,
               "vpipe bench decode: {} has {} frames; looped ×{} so that each run measures {} or "
               "more (a steady rate needs frames after the first 30)\n",
               b.input, frames, b.loop, kMinFrames);
  }
  const bool gpu = b.decode == "nvdec";
  if (b.raw && !gpu) {
    fmt::print(stderr, "vpipe bench decode: --raw decodes with NVCUVID: it needs --decode nvdec\n");
    return 2;
  }
  if (gpu)
    if (auto why = cuda_unavailable_reason(); !why.empty()) {
      fmt::print(stderr, "vpipe bench decode: {} (--decode cpu measures the CPU decoder)\n", why);
      return 1;
    }
  const ProbeTable probe = probe_rows(b, gpu);
  const nlohmann::json streams = stream_rows(b, probe, gpu);
  const nlohmann::json segments = segment_rows(b, gpu);
  const nlohmann::json encoded =
      b.encoder.empty() ? nlohmann::json(nullptr) : encode_rows(b, segments);
  fmt::print(
      "\nInput: {} ×{}, decoder threads {}{}. Steady: frames after each session's or stream's "
      "first "
      "30, over the time "
      "from its 30th frame to its last. NVDEC load: NVML's decoder utilisation, sampled every "
      "0.1 s. CPU cores busy: the process's CPU time (user and system) over the run's wall time.\n",
      b.input, b.loop,
      b.decode_threads == 0 ? std::string("automatic") : std::to_string(b.decode_threads),
      b.decode == "nvdec" ? ", --nvdec-api " + b.nvdec_api : std::string());
  if (!b.json_path.empty()) {
    vpipe::write_file(b.json_path,
                      nlohmann::json{{"input", b.input},
                                     {"loop", b.loop},
                                     {"decode", b.decode},
                                     {"raw_probe", b.raw ? "nvcuvid" : "ffmpeg"},
                                     {"filters", b.filters},
                                     {"mem", b.mem},
                                     {"decode_threads", b.decode_threads},
                                     {"nvdec_api", b.nvdec_api},
                                     {"probe", probe.rows},
                                     {"streams", streams},
                                     {"segments", segments},
                                     {"encoded", encoded}}
                              .dump(2) +
                          '\n',
                      "the JSON");
  }
  return 0;
}

}  // namespace vpipe::bench
