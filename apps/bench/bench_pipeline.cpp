// `vpipe bench pipeline IN`: for each decoder × memory strategy × host
// staging mode, in one process, transcode() runs three times over the same
// input (looped with --loop for a longer run):
//
//   decode-only  demux + decode, nothing else (output null, no filter);
//   no-encoder   decode + upload/filters/download, output null: the
//                pipeline's own ceiling;
//   end-to-end   the whole transcode with libx264, muxed to a file in /tmp.
//
// Once per run, encode-only: the filtered frames are first collected in host
// memory, then libx264 (same settings) encodes them alone. The ratio
// end-to-end / min(decode-only, encode-only) says how close the pipeline
// comes to its slowest stage. fps count frames reaching the end; wall time
// runs from the pipeline's start (setup excluded) to its last frame.
#include "bench_pipeline.hpp"

#include "bench_encode.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe::bench {

namespace {

TranscodeOptions base(const PipelineBenchOptions& b) {
  TranscodeOptions o;
  o.input = b.input;
  o.filters = b.filters;
  o.device = from_name<Device>(b.device, "device");
  o.encoder = "libx264";
  o.preset = b.preset;
  o.loop = b.loop;
  return o;
}

// One row: decode-only, no-encoder and end-to-end runs of one configuration,
// printed as a table row and returned as JSON.
nlohmann::json bench_row(const PipelineBenchOptions& b, const std::string& decoder,
                         const std::string& mem, const std::string& host,
                         const std::string& download, double enc_fps,
                         const std::filesystem::path& tmp) {
  TranscodeOptions o = base(b);
  o.download_copy = download == "copy";
  o.decode = from_name<Decode>(decoder, "decode");
  if (b.device != "cpu") {
    o.mem = from_name<Strategy>(mem, "mem");
    o.host = from_name<HostMemory>(host, "host");
  }
  auto run = [&](const std::string& out, const std::string& filters) {
    TranscodeOptions x = o;
    x.output = out;
    x.filters = filters;
    return transcode(x);
  };
  const auto dec_only = run("null", "");
  const auto no_enc = run("null", b.filters);
  const auto e2e = run(tmp.string(), b.filters);
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  const double ceiling = std::min(dec_only.fps, enc_fps);
  const auto& m = e2e.memory;
  const double frames = static_cast<double>(std::max<std::int64_t>(e2e.video_packets_written, 1));
  const double allocs = m ? static_cast<double>(m->allocations) / frames : 0;
  const std::int64_t syncs = m ? m->device_syncs : 0;
  fmt::print(
      "| {} | {} | {} | {} | {:.0f} | {:.0f} | {:.0f} | {:.2f} | {:.1f} / {:.1f} | {:.2f} "
      "| {} |\n",
      e2e.decode, mem, host, download, dec_only.fps, no_enc.fps, e2e.fps, e2e.fps / ceiling,
      e2e.latency_ms_p50, e2e.latency_ms_p99, allocs, syncs);
  std::fflush(stdout);
  return {{"decode", e2e.decode},
          {"mem", mem},
          {"host", host},
          {"download", download},
          {"decode_only", dec_only.to_json()},
          {"no_encoder", no_enc.to_json()},
          {"end_to_end", e2e.to_json()},
          {"ratio_to_ceiling", e2e.fps / ceiling}};
}

}  // namespace

int run_pipeline_bench(const PipelineBenchOptions& options) {
  vpipe::check_side_file(options.json_path, "--json", options.input, "null");
  PipelineBenchOptions b = options;
  if (b.device == "cpu") {
    b.decoders = {"cpu"};
    b.mems = {"-"};
    b.hosts = {"-"};
    b.downloads = {"-"};
  } else if (auto why = cuda_unavailable_reason(); !why.empty()) {
    fmt::print(stderr, "vpipe bench pipeline: {} (--device cpu runs the CPU path)\n", why);
    return 1;  // the machine lacks what it needs: not a usage error
  }
  const auto tmp =
      std::filesystem::temp_directory_path() / fmt::format("vpipe_bench_{}.mp4", ::getpid());
  nlohmann::json rows = nlohmann::json::array();
  std::int64_t enc_frames = 0;
  TranscodeOptions eo = base(b);
  eo.decode = Decode::kCpu;
  eo.mem = Strategy::kPool;
  const double enc_fps = encode_only_fps(eo, "libx264", &enc_frames);
  fmt::print(stderr, "encode-only (libx264 {}): {:.1f} fps over {} frames\n", b.preset, enc_fps,
             enc_frames);

  fmt::print(
      "| decode | --mem | --host | download | decode-only fps | no-encoder fps | end-to-end fps | "
      "e2e / min(decode, encode) | e2e latency p50 / p99 ms | device allocs / frame | "
      "device syncs |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& decoder : b.decoders)
    for (const auto& mem : b.mems)
      for (const auto& host : b.hosts)
        for (const auto& download : b.downloads) {
          rows.push_back(bench_row(b, decoder, mem, host, download, enc_fps, tmp));
        }
  fmt::print(
      "\nencode-only (libx264 preset {}, frames from memory): {:.0f} fps over {} frames. "
      "Chain: {}. Input: {} ×{}.\n",
      b.preset, enc_fps, enc_frames, b.filters, b.input, b.loop);
  if (!b.json_path.empty()) {
    vpipe::write_file(b.json_path,
                      nlohmann::json{{"input", b.input},
                                     {"loop", b.loop},
                                     {"filters", b.filters},
                                     {"encode_only_fps", enc_fps},
                                     {"encode_only_frames", enc_frames},
                                     {"rows", rows}}
                              .dump(2) +
                          '\n',
                      "the JSON");
  }
  return 0;
}

}  // namespace vpipe::bench
