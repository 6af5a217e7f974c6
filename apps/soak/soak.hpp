// vpipe soak: one workload run for a long time per memory strategy, sampled
// at an interval, judged at the end.
//
//   source (generated frames, sized by the workload) ─► filters (CUDA or CPU)
//     ─► download (pinned or pageable ring) ─► sink (latency recorded)
//
// Workloads, each using device memory the way a service does:
//   constant  every frame the source size;
//   ladder    sizes 1, 3/4, 1/2, 1/3 of the source size, switching every
//             `ladder_every` frames (an adaptive-bitrate ladder);
//   roi       each frame a random region (1/4 to all of the source size);
//   burst     constant, but every `burst_every` frames the source takes
//             `burst_frames` extra frames and holds them for `burst_hold`
//             frames (a spike of frames in flight).
// The strategy sits under a retry layer: an allocation that runs out of
// memory trims the strategy and tries again, twice (counted as retries); if
// that fails too it is a failure, and the run ends.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/graph/frame.hpp"

namespace vpipe {

struct SoakThresholds {
  double warmup = 0.2;                // fraction of the samples ignored at the start
  double max_reserved_growth = 0.10;  // reserved (device) or RSS (CPU) growth after warm-up
  double max_p99_drift = 0.50;        // p99 latency: last third vs first third after warm-up
  double max_rss_growth = 0.10;       // host RSS growth after warm-up (device runs too)
};

struct SoakOptions {
  std::string device = "auto";                  // cuda | cpu | auto
  std::vector<std::string> strategies{"pool"};  // one run each, same seed
  bool parallel = false;                        // the runs at once, sharing the GPU
  std::string workload = "constant";            // constant | ladder | roi | burst
  std::string filters = "resize=1280x720,blur=sigma=1.5";
  int width = 1920, height = 1080;  // the source size (ladder's top rung)
  int ladder_every = 300;
  int burst_every = 600, burst_frames = 24, burst_hold = 120;
  std::optional<double> duration_s;    // per strategy
  std::optional<std::int64_t> frames;  // per strategy
  double interval_s = 1.0;
  double probe_interval_s = 30;  // largest-block probe (up to the budget); 0: never
  // The probe's search ceiling without a budget: a search up to the free memory of a
  // 140 GB GPU stalled every stream for ~6 s (cudaMalloc/cudaFree of tens of GB), and
  // 1 GiB is more than any one buffer of a video tenant (an 8K RGBA float frame is
  // 531 MiB). The probe then says "at least 1 GiB" rather than the exact figure.
  std::size_t probe_max = std::size_t{1} << 30;
  std::optional<std::size_t> budget;  // device bytes per strategy
  std::string host = "pinned";        // download staging
  std::uint32_t seed = 1;
  double fps = 0;  // source pacing; 0: full speed
  std::size_t queue_depth = 8;
  // --gpus: every strategy runs on each of these devices, the GPUs at once (each GPU's
  // strategies in turn, or all at once with `parallel`); empty: the current device.
  std::vector<int> gpus;
  SoakThresholds thresholds;
  std::string out_dir;  // CSV, JSON, PNG, HTML; empty: none
  const std::atomic<int>* interrupt = nullptr;
};

// One sample of one strategy's run.
struct SoakSample {
  std::string strategy;
  int gpu = -1;                               // --gpus: the device it ran on
  double t_s = 0;                             // since the run's start
  std::int64_t frames = 0;                    // done, cumulative
  double fps = 0;                             // over the interval
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // latency of the interval's frames, source → sink
  std::optional<double> reserved_mb;          // held from the device by the strategy
  std::optional<double> used_mb;              // handed out
  std::optional<double> fragmentation;     // 1 − largest free ÷ free, where the strategy sees it
  std::optional<double> largest_block_mb;  // probed (device), on probe samples only
  std::optional<double> probe_ms;          // how long that probe held allocations back
  std::int64_t failures = 0, retries = 0;  // cumulative
  double rss_mb = 0;
  double pinned_mb = 0;
  int width = 0, height = 0;  // the source size at the sample
};

struct SoakVerdict {
  bool pass = true;
  std::vector<std::string> reasons;     // why not
  std::vector<std::string> notes;       // what was measured but not judged, and why
  std::optional<double> memory_growth;  // fraction, after warm-up
  std::optional<double> p99_drift;      // fraction
  std::optional<double> rss_growth;     // host RSS, fraction, after warm-up (device runs)
  std::int64_t failures = 0;
  std::string memory_metric;  // "reserved" or "rss"
};

// Judges one strategy's samples (in time order). Pure: tested on synthetic series.
//  - memory: the last third's median after warm-up against the warm-up's p95 or
//    the first third's median, the higher (reserved device memory; RSS on the
//    CPU path): more than max_reserved_growth above it fails; on device runs host
//    RSS is judged the same way against max_rss_growth (a host leak is a leak);
//  - latency: the median per-sample p99 of the last third after warm-up
//    against the first third's: more than max_p99_drift above it fails, judged
//    when each third holds kDriftSamples samples or more (fewer: one noisy
//    sample decides; a 5-s soak's 107 % "drift" of 3.6 → 7.5 ms on the H200 was
//    one sample against one), else measured and noted as not judged;
//  - any allocation failure (after the retry) fails.
inline constexpr std::size_t kDriftSamples = 3;
[[nodiscard]] SoakVerdict judge(const std::vector<SoakSample>& samples, const SoakThresholds& t);

struct SoakRun {
  std::string strategy;
  int gpu = -1;  // --gpus: the device it ran on (-1: the current one, or the CPU)
  std::vector<SoakSample> samples;
  SoakVerdict verdict;
  std::int64_t frames = 0;
  double wall_s = 0;
  std::int64_t peak_used_bytes = 0;  // the most the strategy had handed out at once (device runs)
  std::string error;                 // what ended the run early, if anything
};

// A run's name in the outputs: its strategy, with "@gpuN" when --gpus placed it.
[[nodiscard]] std::string soak_label(const std::string& strategy, int gpu);

// One run of a soak, and which runs share a thread: each group runs on a thread of
// its own, its runs in turn. No GPUs listed: one group of every strategy (one
// group each with `parallel`). GPUs listed: every strategy on each GPU, one group
// per GPU (one group per run with `parallel`).
struct SoakJob {
  std::string strategy;
  int gpu = -1;
  bool operator==(const SoakJob&) const = default;
};
[[nodiscard]] std::vector<std::vector<SoakJob>> soak_jobs(
    const std::vector<std::string>& strategies, const std::vector<int>& gpus, bool parallel);

struct SoakResult {
  std::string device;
  std::vector<SoakRun> runs;
  [[nodiscard]] bool pass() const;
  [[nodiscard]] nlohmann::json to_json(const SoakOptions& o) const;
};

// The source's frame format for frame i of o.workload (constant, ladder, roi; burst's
// frames are constant-sized): the soak's source and the memory conformance suite's
// workload cases draw sizes from this one function.
[[nodiscard]] FrameFormat soak_frame_format(const SoakOptions& o, std::int64_t i,
                                            std::mt19937& rng);

// The largest-block probe's search range's top: the device's free bytes, capped by the
// budget, else by `probe_max` (SoakOptions). Pure: the probe's bounded cost is tested on it.
[[nodiscard]] std::size_t probe_ceiling(std::size_t free_bytes, std::optional<std::size_t> budget,
                                        std::size_t probe_max);

// Runs every strategy (on every GPU of o.gpus) as soak_jobs groups them. `on_sample` sees each
// sample as it is taken (the live endpoint and the progress line use it).
SoakResult run_soak(const SoakOptions& o,
                    const std::function<void(const SoakSample&)>& on_sample = {});

// Reads a soak.json back (to judge it again with other thresholds).
[[nodiscard]] SoakResult read_soak_json(const std::string& path);

// Writes soak.json, the PNG plots and report.html into o.out_dir (run_soak wrote
// samples.csv there as the samples were taken).
void write_soak_outputs(const SoakResult& r, const SoakOptions& o);

// The Prometheus text exposition of the latest sample per strategy.
[[nodiscard]] std::string prometheus_text(const std::vector<SoakSample>& latest);

}  // namespace vpipe
