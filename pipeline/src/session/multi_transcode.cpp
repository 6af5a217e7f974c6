#include "vpipe/pipeline/session/multi_transcode.hpp"
#include "vpipe/pipeline/session/stream_copy.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/parallel/gpu_placement.hpp"
#include "vpipe/pipeline/session/transcode_files.hpp"

namespace vpipe {

namespace fs = std::filesystem;

std::string stream_output_name(const std::string& output, int k) {
  if (output == "null") return output;
  if (output.find("://") != std::string::npos)
    throw input_error(
        fmt::format("streams: {} is a URL; give a file name (each stream writes "
                    "its own, with -1, -2… added) or null",
                    output));
  const fs::path p(output);
  return (p.parent_path() / fmt::format("{}-{}{}", p.stem().string(), k, p.extension().string()))
      .string();
}

std::int64_t MultiTranscodeReport::frames_written() const {
  std::int64_t frames = 0;
  for (const auto& r : streams) frames += r.video_packets_written;
  return frames;
}

double MultiTranscodeReport::fps_total() const {
  return wall_s > 0 ? static_cast<double>(frames_written()) / wall_s : 0.0;
}

nlohmann::json MultiTranscodeReport::to_json() const {
  nlohmann::json per = nlohmann::json::array();
  std::int64_t dropped = 0;
  double p99_max = 0;
  std::map<int, std::pair<std::int64_t, std::int64_t>> per_gpu;  // device → streams, frames written
  for (std::size_t i = 0; i < streams.size(); ++i) {
    auto j = streams[i].to_json();
    if (!failures[i].empty()) j["status"] = "failed: " + failures[i];
    const int gpu = i < gpus.size() ? gpus[i] : -1;
    if (gpu >= 0) {
      j["gpu"] = gpu;
      per_gpu[gpu].first += 1;
      per_gpu[gpu].second += streams[i].video_packets_written;
    }
    per.push_back(std::move(j));
    dropped += streams[i].frames_dropped;
    p99_max = std::max(p99_max, streams[i].latency_ms_p99);
  }
  nlohmann::json gpu_totals = nlohmann::json::array();
  for (const auto& [gpu, t] : per_gpu)
    gpu_totals.push_back({{"gpu", gpu},
                          {"streams", t.first},
                          {"frames_written", t.second},
                          {"fps", wall_s > 0 ? static_cast<double>(t.second) / wall_s : 0.0}});
  const auto failed =
      std::count_if(failures.begin(), failures.end(), [](const auto& f) { return !f.empty(); });
  return {{"streams", per},
          {"gpus", gpu_totals},
          {"aggregate",
           {{"streams", streams.size()},
            {"failed", failed},
            {"frames_written", frames_written()},
            {"frames_dropped", dropped},
            {"wall_s", wall_s},
            {"fps_total", fps_total()},
            {"latency_ms_p99_worst_stream", p99_max}}}};
}

namespace {
// The GPUs of a multi-stream run and their strategies (none on the CPU path).
class GpuShares {
 public:
  explicit GpuShares(const TranscodeOptions& o) : placer_(loads_of(o, strategies_)) {}
  // Each stream's device (-1: the CPU path), placed one after another (before any runs).
  std::vector<int> place(int n) {
    std::vector<int> out(static_cast<std::size_t>(n), -1);
    if (!placer_.empty())
      for (auto& d : out) d = placer_.place();
    return out;
  }
  // A stream failed with a CUDA error on `device` (--on-gpu-error move): that GPU takes no
  // more streams; the GPU this stream goes to, or nothing when no other can take it.
  std::optional<int> move_from(int device) { return placer_.move_from(device); }
  // Makes `device` current on the calling thread; its strategy.
  MemoryStrategy& use(int device) {
    VPIPE_CUDA_TRY(cudaSetDevice(device));
    return strategies_.at(device);
  }

 private:
  // One strategy per GPU, each made with its device current, and the GPUs' loads.
  static std::vector<GpuLoad> loads_of(const TranscodeOptions& o,
                                       std::map<int, MemoryStrategy>& strategies) {
    std::vector<GpuLoad> loads;
    if (o.device == Device::kCpu || !cuda_unavailable_reason().empty()) return loads;
    int current = 0;
    VPIPE_CUDA_TRY(cudaGetDevice(&current));
    for (const int d : o.gpus.empty() ? std::vector<int>{current} : o.gpus) {
      VPIPE_CUDA_TRY(cudaSetDevice(d));
      StrategyOptions so;
      so.budget = o.budget;
      strategies.emplace(d, make_strategy(o.mem, so));
      std::size_t free = 0, total = 0;
      VPIPE_CUDA_TRY(cudaMemGetInfo(&free, &total));
      loads.push_back({d, 0, 1, 0, o.budget.value_or(free), 0});
    }
    VPIPE_CUDA_TRY(cudaSetDevice(current));
    return loads;
  }
  std::map<int, MemoryStrategy> strategies_;  // before placer_: loads_of fills it
  GpuPlacer placer_;
};

// One stream of transcode_streams: `mine` on `gpu` (-1: the CPU path). With --on-gpu-error
// move, a CUDA error there starts the stream again on the GPU move_from gives (its output
// rewritten from the start), until it ends or no GPU is left; each move is a note in the
// report. Returns the failure, empty when the stream ended well; `gpu` ends as its last GPU.
std::string run_stream(const TranscodeOptions& mine, RunHooks hooks, GpuShares& gpus, int& gpu,
                       TranscodeReport& report) {
  std::vector<std::string> moves;
  std::string failure;
  for (;;) {
    if (gpu >= 0) hooks.shared_memory = &gpus.use(gpu);  // this thread on that GPU
    bool gpu_fault = false;
    failure.clear();
    try {
      report = transcode(mine, hooks);
    } catch (const std::exception& e) {
      const auto* failed = dynamic_cast<const transcode_failed*>(&e);
      report = failed ? failed->report : TranscodeReport{};
      report.input = mine.input;
      report.output = mine.output;
      failure = e.what();
      gpu_fault = is_gpu_fault(e);
    }
    if (!gpu_fault || gpu < 0 || mine.on_gpu_error != OnGpuError::kMove) break;
    const auto to = gpus.move_from(gpu);
    if (!to) {
      failure += fmt::format(" (on GPU {}; on_gpu_error move: no other GPU can take it)", gpu);
      break;
    }
    moves.push_back(fmt::format("moved from GPU {} to GPU {} after: {}", gpu, *to, failure));
    spdlog::warn("stream {}: {}", hooks.stream_label, moves.back());
    gpu = *to;
  }
  report.notes.insert(report.notes.begin(), moves.begin(), moves.end());
  return failure;
}
}  // namespace

MultiTranscodeReport transcode_streams(const TranscodeOptions& o, const RunHooks& hooks) {
  const int n = o.streams;
  if (n < 1) throw input_error(fmt::format("streams {}: expected 1 or more", n));
  if (is_stream_copy(o)) check_stream_copy(o);  // --streams with copy: one line, before any
  check_files(o);                               // every stream's files together, before any opens
  std::vector<std::string> outputs;
  for (int k = 1; k <= n; ++k)
    outputs.push_back(n == 1 ? o.output : stream_output_name(o.output, k));
  // On the device: one strategy per GPU (no allocation crosses devices), each
  // made with its device current, and every stream placed by headroom.
  GpuShares gpus(o);
  MultiTranscodeReport multi;
  multi.streams.resize(static_cast<std::size_t>(n));
  multi.failures.resize(static_cast<std::size_t>(n));
  multi.gpus = gpus.place(n);
  std::vector<std::atomic<std::int64_t>> done(static_cast<std::size_t>(n));
  const auto t0 = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int k = 0; k < n; ++k) {
      threads.emplace_back([&, k] {
        const auto i = static_cast<std::size_t>(k);
        TranscodeOptions mine = o;
        mine.output = outputs[i];
        // mine.streams stays n: the run this stream is one of (--nvdec-api auto reads it)
        RunHooks own = hooks;
        own.stream_label = std::to_string(k + 1);
        own.on_progress = nullptr;
        if (hooks.on_progress)  // the first stream reports the sum of all
          own.on_progress = [&, i](const TranscodeProgress& p) {
            done[i] = p.frames_done;
            if (i != 0) return;
            TranscodeProgress sum = p;
            sum.frames_done = 0;
            for (const auto& d : done) sum.frames_done += d.load();
            sum.frames_total = p.frames_total > 0 ? p.frames_total * n : 0;
            hooks.on_progress(sum);
          };
        multi.failures[i] = run_stream(mine, std::move(own), gpus, multi.gpus[i], multi.streams[i]);
      });
    }
  }
  multi.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return multi;
}

}  // namespace vpipe
