#include "soak/soak.hpp"
#include "soak/sample_fields.hpp"

#include "transcode_metrics.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <sstream>
#include <thread>

#include "soak/plot.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/synthetic.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/filters/cuda_stages.hpp"
#include "vpipe/pipeline/graph/pipeline.hpp"
#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/session/frame_graph.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {
constexpr std::size_t kProbeStep = std::size_t{16} << 20;  // the probe's precision
}  // namespace

namespace {
int even(double v) { return std::max(2, static_cast<int>(v) / 2 * 2); }
}  // namespace

FrameFormat soak_frame_format(const SoakOptions& o, std::int64_t i, std::mt19937& rng) {
  const int w = o.width, h = o.height;
  if (o.workload == "ladder") {
    static constexpr std::array<double, 4> kRungs = {1.0, 0.75, 0.5, 1.0 / 3};
    const double s =
        kRungs[static_cast<std::size_t>(i / std::max(1, o.ladder_every)) % kRungs.size()];
    return {AV_PIX_FMT_NV12, even(w * s), even(h * s)};
  }
  if (o.workload == "roi") {
    std::uniform_real_distribution<double> d(0.25, 1.0);
    return {AV_PIX_FMT_NV12, even(w * d(rng)), even(h * d(rng))};
  }
  return {AV_PIX_FMT_NV12, w, h};
}

std::size_t probe_ceiling(std::size_t free_bytes, std::optional<std::size_t> budget,
                          std::size_t probe_max) {
  return std::min(free_bytes, budget.value_or(probe_max));
}

// ---- verdict ---------------------------------------------------------------

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
// The q-th sample value (nearest rank); 0 for none.
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<std::size_t>(rank, 1)) - 1];
}
}  // namespace

namespace {
struct Growth {
  double base, level, growth;
};
// A trend, not a swing (issue #25): naive's "reserved" is its frames in
// flight, and one spike late in a run is not growth. The level of the last
// third after warm-up (its median) against the baseline: the warm-up's p95
// (a fill-up counts as warm-up, and its swings set the envelope) or the
// first third's median, the higher; with no warm-up, the first sample. A
// leak or a step moves the median; a swing does not. nullopt: no baseline.
template <class Metric>
std::optional<Growth> growth_after_warmup(const std::vector<SoakSample>& samples, std::size_t start,
                                          std::size_t k, Metric&& mem) {
  const auto post = samples.begin() + static_cast<std::ptrdiff_t>(start);
  const std::size_t n = samples.size() - start;
  std::vector<double> warm, first_third, last_third;
  for (std::size_t i = 0; i < start; ++i) warm.push_back(mem(samples[i]));
  for (std::size_t i = 0; i < k; ++i)
    first_third.push_back(mem(post[static_cast<std::ptrdiff_t>(i)]));
  for (std::size_t i = n - k; i < n; ++i)
    last_third.push_back(mem(post[static_cast<std::ptrdiff_t>(i)]));
  const double base =
      start == 0 ? mem(*post) : std::max(percentile(warm, 0.95), median(first_third));
  if (base <= 0) return std::nullopt;
  const double level = median(last_third);
  return Growth{base, level, level / base - 1};
}
}  // namespace

SoakVerdict judge(const std::vector<SoakSample>& samples, const SoakThresholds& t) {
  SoakVerdict v;
  if (!samples.empty()) v.failures = samples.back().failures;
  if (v.failures > 0) {
    v.pass = false;
    v.reasons.push_back(fmt::format("{} allocation failure(s) after retrying", v.failures));
  }
  const auto start =
      static_cast<std::size_t>(std::floor(static_cast<double>(samples.size()) * t.warmup));
  const std::vector<SoakSample> post(
      samples.begin() + static_cast<std::ptrdiff_t>(std::min(start, samples.size())),
      samples.end());
  if (post.size() < 3) {
    v.pass = false;
    v.reasons.push_back(
        fmt::format("only {} sample(s) after warm-up: run longer or sample more "
                    "often (--interval)",
                    post.size()));
    return v;
  }
  const std::size_t k = std::max<std::size_t>(1, post.size() / 3);
  const bool device = std::any_of(post.begin(), post.end(),
                                  [](const SoakSample& s) { return s.reserved_mb.has_value(); });
  v.memory_metric = device ? "reserved" : "rss";
  const auto rss = [](const SoakSample& s) { return s.rss_mb; };
  const auto mem = [device](const SoakSample& s) {
    return device ? s.reserved_mb.value_or(0) : s.rss_mb;
  };
  const auto judge_growth = [&](const std::string& metric, double limit, auto&& value) {
    const auto g = growth_after_warmup(samples, start, k, value);
    if (g && g->growth > limit) {
      v.pass = false;
      v.reasons.push_back(
          fmt::format("{} memory grew {:.1f} % after warm-up ({:.1f} → {:.1f} MB: the "
                      "last third's median against the warm-up's p95; limit {:.0f} %)",
                      metric, g->growth * 100, g->base, g->level, limit * 100));
    }
    return g ? std::optional<double>(g->growth) : std::nullopt;
  };
  v.memory_growth = judge_growth(v.memory_metric, t.max_reserved_growth, mem);
  if (device) v.rss_growth = judge_growth("host RSS", t.max_rss_growth, rss);
  std::vector<double> first_p99, last_p99;
  for (std::size_t i = 0; i < k; ++i) first_p99.push_back(post[i].p99_ms);
  for (std::size_t i = post.size() - k; i < post.size(); ++i) last_p99.push_back(post[i].p99_ms);
  const double a = median(first_p99), b = median(last_p99);
  if (a > 0) {
    v.p99_drift = b / a - 1;
    if (k < kDriftSamples)
      v.notes.push_back(fmt::format(
          "p99 drift not judged: {} sample(s) per third after warm-up, {} needed (run longer "
          "or sample more often: --interval)",
          k, kDriftSamples));
    else if (*v.p99_drift > t.max_p99_drift) {
      v.pass = false;
      v.reasons.push_back(
          fmt::format("p99 latency drifted {:.0f} % ({:.2f} → {:.2f} ms, medians of "
                      "the first and last thirds; limit {:.0f} %)",
                      *v.p99_drift * 100, a, b, t.max_p99_drift * 100));
    }
  }
  return v;
}

bool SoakResult::pass() const {
  return std::all_of(runs.begin(), runs.end(),
                     [](const SoakRun& r) { return r.verdict.pass && r.error.empty(); });
}

// ---- the workload ------------------------------------------------------------

namespace {

std::optional<double> mb(std::optional<std::size_t> bytes) {
  if (!bytes) return std::nullopt;
  return static_cast<double>(*bytes) / 1e6;
}

double rss_mb() { return static_cast<double>(process_rss_bytes()) / 1e6; }

struct SourceState {
  std::atomic<int> width{0}, height{0};
};

class SoakSource final : public Source<Frame> {
 public:
  SoakSource(const SoakOptions& o, DeviceMemoryResource* mr, cudaStream_t stream,
             SourceState& state)
      : o_(o), mr_(mr), stream_(stream), state_(state), rng_(o.seed) {}
  [[nodiscard]] std::string name() const override { return "source"; }

  Flow produce(Output<Frame>& out) override {
    const auto now = Clock::now();
    if (i_ == 0) start_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if ((o_.frames && i_ >= *o_.frames) || (o_.duration_s && elapsed >= *o_.duration_s) ||
        (o_.interrupt && o_.interrupt->load()))
      return Flow::kStop;
    if (o_.fps > 0)
      std::this_thread::sleep_until(
          start_ + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(static_cast<double>(i_) / o_.fps)));
    const FrameFormat format = soak_frame_format(o_, i_, rng_);
    state_.width = format.width;
    state_.height = format.height;
    Frame f = make_frame(format);
    f.index = i_;
    f.pts = i_;
    f.time_base = {1, 30};
    f.origin = Clock::now();
    if (o_.workload == "burst") burst(format);
    ++i_;
    return out.emit(std::move(f)) ? Flow::kContinue : Flow::kStop;
  }

 private:
  Frame make_frame(const FrameFormat& format) {
    if (mr_) {
      Frame f = Frame::allocate_device(format, *mr_, stream_);
      synthetic::fill_pattern(reinterpret_cast<std::uint32_t*>(f.device->data()),
                              f.device->bytes() / 4, o_.seed ^ static_cast<std::uint32_t>(i_),
                              stream_);
      f.ready = std::make_shared<ReadyEvent>(stream_);
      return f;
    }
    Frame f = Frame::allocate_host(format);
    for (int p = 0; p < f.num_planes; ++p) {
      const PlaneView& v = f.planes[static_cast<std::size_t>(p)];
      for (int y = 0; y < v.height; ++y)
        std::memset(v.row(y), static_cast<int>((i_ * 3 + y + p * 50) & 0xff), v.row_bytes());
    }
    return f;
  }

  // Every burst_every frames: burst_frames more frames held for burst_hold.
  void burst(const FrameFormat& format) {
    while (!held_.empty() && held_.front().first <= i_) held_.pop_front();
    if (o_.burst_every > 0 && i_ > 0 && i_ % o_.burst_every == 0)
      for (int k = 0; k < o_.burst_frames; ++k)
        held_.emplace_back(i_ + o_.burst_hold, make_frame(format));
  }

  const SoakOptions& o_;
  DeviceMemoryResource* mr_;
  cudaStream_t stream_;
  SourceState& state_;
  std::mt19937 rng_;
  std::int64_t i_ = 0;
  Clock::time_point start_{};
  std::deque<std::pair<std::int64_t, Frame>> held_;
};

// Largest single cudaMalloc the device grants now, up to probe_ceiling(), to
// 16 MiB: what another tenant of the GPU could get.
std::size_t probe_device_largest(cudaStream_t stream, const SoakOptions& o) {
  std::size_t free = 0, total = 0;
  VPIPE_CUDA_TRY(cudaMemGetInfo(&free, &total));
  NaiveResource naive;
  return probe_largest_block(naive, stream, probe_ceiling(free, o.budget, o.probe_max), 0,
                             kProbeStep);
}

// When the last largest-block probe held allocations back (steady-clock ns; end
// INT64_MAX while it runs): a frame's latency leaves that pause out, so the
// probe does not distort what it probes.
class ProbePause {
 public:
  void begin(Clock::time_point t) {  // start first: a reader between sees no overlap
    start_ = t.time_since_epoch().count();
    end_ = INT64_MAX;
  }
  void end(Clock::time_point t) { end_ = t.time_since_epoch().count(); }
  // [from, to]'s overlap with the pause.
  [[nodiscard]] Clock::duration overlap(Clock::time_point from, Clock::time_point to) const {
    const auto a = std::max(from.time_since_epoch().count(), start_.load());
    const auto b = std::min(to.time_since_epoch().count(), end_.load());
    return Clock::duration(b > a ? b - a : 0);
  }

 private:
  std::atomic<Clock::rep> start_{0}, end_{0};
};

// One strategy's soak: owns what its pipeline uses, as members declared in the
// order they must die, last first (the stages point at the graph's rings, the
// streams and the memory).
class SoakRunner {
 public:
  // The caller made the run's device current (--gpus): the strategy and streams are made there.
  SoakRunner(const SoakOptions& o, const std::string& strategy_name, bool cuda, int gpu,
             const std::function<void(const SoakSample&)>& on_sample)
      : o_(o),
        cuda_(cuda),
        on_sample_(on_sample),
        strategy_(cuda ? std::optional<MemoryStrategy>(make_strategy(strategy_name, budget_of(o)))
                       : std::nullopt),
        retry_(cuda ? std::make_unique<RetryAdaptor>(strategy_->resource(), strategy_->strategy())
                    : nullptr),
        graph_({retry_.get(), &streams_, from_name<HostMemory>(o.host, "host"), false},
               DropPolicy::kBlock, plan_queues(o.queue_depth)) {
    run_.strategy = strategy_name;
    run_.gpu = gpu;
    wire();
    probe_stream_ = cuda ? streams_.make() : nullptr;
  }

  SoakRun run() {
    t0_ = last_t_ = next_probe_ = Clock::now();
    std::atomic<bool> done{false};
    std::thread sampler([&] {
      // It asks the strategy: its device, current on the run's thread already (so no error to
      // throw from this thread).
      if (run_.gpu >= 0) cudaSetDevice(run_.gpu);
      auto next = t0_;
      while (!done.load()) {
        next += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(o_.interval_s));
        while (!done.load() && Clock::now() < next)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (done.load()) break;
        try {
          sample();
        } catch (const std::exception& e) {
          spdlog::error("soak sample: {}", e.what());
        }
      }
    });
    try {
      pipeline_.run();
    } catch (const std::exception& e) {
      run_.error = e.what();
    }
    done = true;
    sampler.join();
    // The tail since the last sample (or the whole run, if it was shorter than one interval).
    if (run_.samples.empty() || run_.samples.back().frames < counters_.video_packets_written.load())
      sample();
    run_.frames = counters_.video_packets_written.load();
    if (cuda_) run_.peak_used_bytes = strategy_->stats().stats().bytes.peak;
    run_.wall_s = std::chrono::duration<double>(Clock::now() - t0_).count();
    run_.verdict = judge(run_.samples, o_.thresholds);
    if (!run_.error.empty()) {
      run_.verdict.pass = false;
      run_.verdict.reasons.insert(run_.verdict.reasons.begin(),
                                  "the run ended early: " + run_.error);
    }
    return std::move(run_);
  }

 private:
  static StrategyOptions budget_of(const SoakOptions& o) {
    StrategyOptions so;
    so.budget = o.budget;
    return so;
  }

  // source → filters (CUDA or CPU) → download → sink (latency recorded).
  void wire() {
    auto q = graph_.frame_queue(pipeline_, "source→", o_.queue_depth);
    const cudaStream_t source_stream = cuda_ ? streams_.make() : nullptr;
    pipeline_.add_source<Frame>(
        std::make_unique<SoakSource>(o_, retry_.get(), source_stream, state_), q);
    auto chain = build_chain(parse_chain(o_.filters), {AV_PIX_FMT_NV12, o_.width, o_.height});
    const FrameFormat out =
        chain.empty() ? FrameFormat{AV_PIX_FMT_NV12, o_.width, o_.height} : chain.back().out;
    std::optional<CudaSegment> on_gpu;
    if (cuda_ && !chain.empty()) {
      for (const auto& c : chain)
        if (!c.filter->has_cuda())
          throw input_error(
              fmt::format("soak on the GPU: '{}' has no CUDA implementation", c.label));
      on_gpu = CudaSegment{0, chain.size() - 1};
    }
    q = graph_.add_chain(pipeline_, q, std::move(chain), on_gpu, cuda_);
    q = graph_.to_host(pipeline_, q, out);
    pipeline_.add_sink<Frame>(
        std::make_unique<NullSink>(counters_,
                                   [this](const Frame& f) {
                                     const auto now = Clock::now();
                                     const auto ns =
                                         std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             now - f.origin - pause_.overlap(f.origin, now))
                                             .count();
                                     std::lock_guard lock(window_mu_);
                                     window_.record(static_cast<std::uint64_t>(ns));
                                   }),
        q);
  }

  void sample() {
    SoakSample s;
    s.strategy = run_.strategy;
    s.gpu = run_.gpu;
    const auto now = Clock::now();
    s.t_s = std::chrono::duration<double>(now - t0_).count();
    s.frames = counters_.video_packets_written.load();
    const double dt = std::chrono::duration<double>(now - last_t_).count();
    s.fps = dt > 0 ? static_cast<double>(s.frames - last_frames_) / dt : 0;
    last_t_ = now;
    last_frames_ = s.frames;
    {
      std::lock_guard lock(window_mu_);
      s.p50_ms = static_cast<double>(window_.percentile(0.5)) * 1e-6;
      s.p99_ms = static_cast<double>(window_.percentile(0.99)) * 1e-6;
      s.max_ms = static_cast<double>(window_.max()) * 1e-6;
      window_.reset();
    }
    if (cuda_) device_sample(s, now);
    s.rss_mb = rss_mb();
    s.width = state_.width;
    s.height = state_.height;
    run_.samples.push_back(s);
    if (on_sample_) on_sample_(s);
  }

  void device_sample(SoakSample& s, Clock::time_point now) {
    const auto usage = strategy_->strategy().usage();
    const auto st = strategy_->stats().stats();
    s.used_mb = static_cast<double>(st.bytes.value) / 1e6;
    s.reserved_mb = usage.reserved ? mb(usage.reserved) : s.used_mb;
    s.fragmentation = usage.fragmentation();
    s.failures = retry_->failures();
    s.retries = retry_->retries();
    s.pinned_mb = static_cast<double>(graph_.pinned_bytes()) / 1e6;
    if (o_.probe_interval_s > 0 && now >= next_probe_) {
      next_probe_ = now + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(o_.probe_interval_s));
      std::unique_lock lock(retry_->gate());  // no allocation races the probe
      const auto t = Clock::now();
      pause_.begin(t);
      std::size_t largest = 0;
      try {
        largest = probe_device_largest(probe_stream_, o_);
      } catch (...) {
        pause_.end(Clock::now());
        throw;
      }
      const auto done = Clock::now();
      pause_.end(done);
      s.largest_block_mb = static_cast<double>(largest) / 1e6;
      s.probe_ms = std::chrono::duration<double, std::milli>(done - t).count();
    }
  }

  const SoakOptions& o_;
  const bool cuda_;
  const std::function<void(const SoakSample&)>& on_sample_;
  SoakRun run_;
  std::optional<MemoryStrategy> strategy_;
  std::unique_ptr<RetryAdaptor> retry_;
  StreamSet streams_;
  FrameGraph graph_;
  SourceState state_;
  MediaCounters counters_;
  std::mutex window_mu_;
  Histogram window_;
  ProbePause pause_;
  Pipeline pipeline_;  // last: its stages die first
  cudaStream_t probe_stream_ = nullptr;
  Clock::time_point t0_{}, last_t_{}, next_probe_{};
  std::int64_t last_frames_ = 0;
};

SoakRun run_one(const SoakOptions& o, const SoakJob& job, bool cuda,
                const std::function<void(const SoakSample&)>& on_sample) {
  if (job.gpu >= 0) VPIPE_CUDA_TRY(cudaSetDevice(job.gpu));  // this thread's runs on that GPU
  return SoakRunner(o, job.strategy, cuda, job.gpu, on_sample).run();
}

// The groups of soak_jobs, each on a thread of its own, its runs in turn; a run that cannot
// start is a failed run with the reason, and the others go on. Runs in the order of the groups.
std::vector<SoakRun> run_groups(const SoakOptions& o,
                                const std::vector<std::vector<SoakJob>>& groups,
                                const std::function<void(const SoakSample&)>& on_sample) {
  std::vector<std::vector<SoakRun>> done(groups.size());
  std::mutex mu;
  const auto sample = [&](const SoakSample& s) {
    std::lock_guard lock(mu);
    if (on_sample) on_sample(s);
  };
  {
    std::vector<std::jthread> threads;
    for (std::size_t g = 0; g < groups.size(); ++g)
      threads.emplace_back([&, g] {
        for (const auto& job : groups[g]) {
          if (o.interrupt && o.interrupt->load()) break;
          try {
            done[g].push_back(run_one(o, job, true, sample));
          } catch (const std::exception& e) {
            SoakRun failed;
            failed.strategy = job.strategy;
            failed.gpu = job.gpu;
            failed.error = e.what();
            failed.verdict.pass = false;
            failed.verdict.reasons.push_back(std::string("could not run: ") + e.what());
            done[g].push_back(std::move(failed));
          }
        }
      });
  }
  std::vector<SoakRun> runs;
  for (auto& d : done) std::move(d.begin(), d.end(), std::back_inserter(runs));
  return runs;
}

}  // namespace

std::string soak_label(const std::string& strategy, int gpu) {
  return gpu < 0 ? strategy : fmt::format("{}@gpu{}", strategy, gpu);
}

std::vector<std::vector<SoakJob>> soak_jobs(const std::vector<std::string>& strategies,
                                            const std::vector<int>& gpus, bool parallel) {
  std::vector<std::vector<SoakJob>> groups;
  const std::vector<int> devices = gpus.empty() ? std::vector<int>{-1} : gpus;
  for (const int d : devices) {
    if (!parallel) groups.emplace_back();
    for (const auto& s : strategies) {
      if (parallel) groups.emplace_back();
      groups.back().push_back({s, d});
    }
  }
  return groups;
}

namespace {
// samples.csv, a line per sample as it is taken (every run's, in time order,
// labelled STRATEGY or STRATEGY@gpuN), flushed: a crash or a kill leaves the data.
class SampleLog {
 public:
  explicit SampleLog(const std::string& out_dir) {
    if (out_dir.empty()) return;
    fs::create_directories(out_dir);
    path_ = (fs::path(out_dir) / "samples.csv").string();
    csv_.open(path_, std::ios::trunc);
    csv_ << "strategy";
    for (const auto& f : sample_fields()) csv_ << ',' << f.key;
    csv_ << '\n' << std::flush;
    check();
  }
  void write(const SoakSample& s) {
    if (path_.empty()) return;
    std::lock_guard lock(mu_);  // --parallel: several runs' samplers
    csv_ << soak_label(s.strategy, s.gpu);
    for (const auto& f : sample_fields()) {
      const auto v = f.get(s);
      csv_ << ','
           << (!v ? std::string()
               : f.kind == SampleField::Kind::kInt
                   ? fmt::format("{}", static_cast<std::int64_t>(*v))
                   : fmt::format("{:.{}f}", *v, f.csv_decimals));
    }
    csv_ << '\n' << std::flush;
    check();
  }

 private:
  void check() {
    if (!csv_) throw std::runtime_error(fmt::format("cannot write '{}'", path_));
  }
  std::string path_;
  std::mutex mu_;
  std::ofstream csv_;
};
}  // namespace

SoakResult run_soak(const SoakOptions& o,
                    const std::function<void(const SoakSample&)>& user_sample) {
  if (o.device != "cpu" && o.device != "cuda" && o.device != "auto")
    throw input_error(fmt::format("--device {}: expected cpu, cuda or auto", o.device));
  static const std::vector<std::string> kWorkloads = {"constant", "ladder", "roi", "burst"};
  if (std::find(kWorkloads.begin(), kWorkloads.end(), o.workload) == kWorkloads.end())
    throw input_error(
        fmt::format("--workload {}: expected constant, ladder, roi or burst", o.workload));
  if (!o.duration_s && !o.frames) throw input_error("soak: give --duration or --frames");
  if (o.width < 2 || o.height < 2) throw input_error("soak: --size must be at least 2x2");
  const std::string why = o.device == "cpu" ? "--device cpu" : cuda_unavailable_reason();
  if (o.device == "cuda" && !why.empty()) throw input_error(fmt::format("--device cuda: {}", why));
  SoakResult r;
  r.device = why.empty() ? "cuda" : "cpu";
  if (r.device == "cuda")
    for (const auto& s : o.strategies)
      if (std::find(strategy_names().begin(), strategy_names().end(), s) == strategy_names().end())
        throw input_error(fmt::format("--mem/--compare: unknown strategy '{}'", s));
  const auto strategies = r.device == "cuda" ? o.strategies : std::vector<std::string>{"cpu"};
  if (r.device == "cpu" && o.strategies.size() > 1)
    spdlog::warn(
        "soak: {}: the CPU path has no device memory strategy; --compare {} becomes one "
        "CPU run",
        why, fmt::join(o.strategies, ","));
  if (r.device == "cpu" && !o.gpus.empty()) throw input_error(fmt::format("--gpus: {}", why));
  const auto groups =
      soak_jobs(strategies, r.device == "cuda" ? o.gpus : std::vector<int>{}, o.parallel);
  SampleLog log(o.out_dir);
  const std::function<void(const SoakSample&)> on_sample = [&](const SoakSample& s) {
    log.write(s);
    if (user_sample) user_sample(s);
  };
  if (groups.size() > 1) {
    r.runs = run_groups(o, groups, on_sample);
    return r;
  }
  for (const auto& job : groups.front()) {  // one after another on this thread
    if (o.interrupt && o.interrupt->load()) break;
    r.runs.push_back(run_one(o, job, r.device == "cuda", on_sample));
  }
  return r;
}

// ---- outputs -----------------------------------------------------------------

namespace {
template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
}  // namespace

nlohmann::json SoakResult::to_json(const SoakOptions& o) const {
  nlohmann::json runs_j = nlohmann::json::array();
  for (const auto& r : runs) {
    nlohmann::json samples = nlohmann::json::array();
    for (const auto& s : r.samples) {
      nlohmann::json sj = nlohmann::json::object();
      for (const auto& f : sample_fields()) {
        const auto v = f.get(s);
        sj[f.key] = !v ? nlohmann::json()
                    : f.kind == SampleField::Kind::kInt
                        ? nlohmann::json(static_cast<std::int64_t>(*v))
                        : nlohmann::json(*v);
      }
      samples.push_back(std::move(sj));
    }
    runs_j.push_back({{"strategy", r.strategy},
                      {"gpu", r.gpu},
                      {"frames", r.frames},
                      {"wall_s", r.wall_s},
                      {"error", r.error},
                      {"verdict",
                       {{"pass", r.verdict.pass},
                        {"reasons", r.verdict.reasons},
                        {"notes", r.verdict.notes},
                        {"memory_metric", r.verdict.memory_metric},
                        {"memory_growth", opt(r.verdict.memory_growth)},
                        {"p99_drift", opt(r.verdict.p99_drift)},
                        {"rss_growth", opt(r.verdict.rss_growth)},
                        {"failures", r.verdict.failures}}},
                      {"samples", samples}});
  }
  return {{"device", device},
          {"options",
           {{"workload", o.workload},
            {"filters", o.filters},
            {"width", o.width},
            {"height", o.height},
            {"ladder_every", o.ladder_every},
            {"duration_s", opt(o.duration_s)},
            {"frames", opt(o.frames)},
            {"interval_s", o.interval_s},
            {"budget_bytes", opt(o.budget)},
            {"host", o.host},
            {"seed", o.seed},
            {"fps", o.fps},
            {"parallel", o.parallel},
            {"strategies", o.strategies},
            {"gpus", o.gpus},
            {"thresholds",
             {{"warmup", o.thresholds.warmup},
              {"max_reserved_growth", o.thresholds.max_reserved_growth},
              {"max_p99_drift", o.thresholds.max_p99_drift},
              {"max_rss_growth", o.thresholds.max_rss_growth}}},
            {"probe_interval_s", o.probe_interval_s},
            {"probe_max_bytes", o.probe_max}}},
          {"pass", pass()},
          {"runs", runs_j}};
}

SoakResult read_soak_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw input_error(fmt::format("cannot open '{}'", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    throw input_error(fmt::format("{}: not a soak.json: {}", path, e.what()));
  }
  auto get_opt = [](const nlohmann::json& v) -> std::optional<double> {
    return v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
  };
  SoakResult r;
  r.device = j.value("device", "");
  for (const auto& rj : j.at("runs")) {
    SoakRun run;
    run.strategy = rj.at("strategy");
    run.gpu = rj.value("gpu", -1);  // written since --gpus; older files ran on one device
    run.frames = rj.value("frames", std::int64_t{0});
    run.wall_s = rj.value("wall_s", 0.0);
    run.error = rj.value("error", "");
    for (const auto& sj : rj.at("samples")) {
      SoakSample s;
      s.strategy = run.strategy;
      s.gpu = run.gpu;
      for (const auto& field : sample_fields())  // a field newer than the file: absent
        field.set(s, sj.contains(field.key) ? get_opt(sj.at(field.key)) : std::nullopt);
      run.samples.push_back(s);
    }
    r.runs.push_back(std::move(run));
  }
  return r;
}

namespace {

// One PNG per measure, every strategy a line; returns the files written.
std::vector<std::string> write_charts(const SoakResult& r, const fs::path& dir) {
  std::vector<std::string> written;
  for (const auto& c : sample_fields()) {
    if (!c.chart) continue;
    std::vector<PlotSeries> series;
    bool any = false;
    for (const auto& run : r.runs) {
      PlotSeries ps{soak_label(run.strategy, run.gpu), {}, {}};
      for (const auto& s : run.samples) {
        const auto v = c.get(s);
        ps.x.push_back(s.t_s);
        ps.y.push_back(v ? *v : NAN);
        any |= v.has_value();
      }
      series.push_back(std::move(ps));
    }
    if (!any) continue;
    write_line_chart_png((dir / c.chart).string(), c.title, "time (s)", c.unit, series);
    written.push_back(c.chart);
  }
  return written;
}

void write_html_report(const SoakResult& r, const SoakOptions& o, const fs::path& dir,
                       const std::vector<std::string>& charts) {
  std::ostringstream html;
  html << "<!doctype html><meta charset=utf-8><title>vpipe soak</title>\n"
          "<style>body{font-family:sans-serif;max-width:1700px;margin:1em auto}"
          "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px "
          "8px;text-align:right}"
          ".pass{background:#d4f4d4}.fail{background:#f8d0d0}img{width:820px;margin:4px}</style>\n";
  html << fmt::format(
      "<h1>vpipe soak: {} workload on {}</h1>\n<p>{}x{} source, chain <code>{}</code>, "
      "{}{}{}, sampled every {} s, {} staging. Verdict thresholds: warm-up {:.0f} % of "
      "samples, memory growth ≤ {:.0f} %, host RSS growth ≤ {:.0f} % (device runs), p99 drift ≤ "
      "{:.0f} %, no failure.</p>\n",
      o.workload, r.device, o.width, o.height, o.filters,
      o.duration_s ? fmt::format("{} s per strategy", *o.duration_s)
                   : fmt::format("{} frames per strategy", o.frames.value_or(0)),
      o.budget ? fmt::format(", budget {:.0f} MB", static_cast<double>(*o.budget) / 1e6) : "",
      !o.gpus.empty() ? fmt::format(", on GPUs {} at once{}", fmt::join(o.gpus, ","),
                                    o.parallel ? ", the strategies at once on each" : "")
      : o.parallel && r.runs.size() > 1 ? ", the strategies running at the same time on one GPU"
                                        : "",
      o.interval_s, o.host, o.thresholds.warmup * 100, o.thresholds.max_reserved_growth * 100,
      o.thresholds.max_rss_growth * 100, o.thresholds.max_p99_drift * 100);
  html << "<table><tr><th>strategy</th><th>verdict</th><th>frames</th><th>mean fps</th>"
          "<th>p99 ms (median)</th><th>memory growth</th><th>host RSS growth</th><th>p99 drift</th>"
          "<th>probe ms (max)</th><th>retries</th>"
          "<th>failures</th><th>why</th></tr>\n";
  for (const auto& run : r.runs) {
    std::vector<double> p99;
    std::int64_t retries = 0;
    double probe_max = 0;
    for (const auto& s : run.samples) {
      p99.push_back(s.p99_ms);
      retries = s.retries;
      probe_max = std::max(probe_max, s.probe_ms.value_or(0));
    }
    const auto pct = [](const std::optional<double>& v) {
      return v ? fmt::format("{:+.1f} %", *v * 100) : std::string("—");
    };
    std::string why;
    for (const auto& reason : run.verdict.reasons) why += reason + "; ";
    for (const auto& note : run.verdict.notes) why += note + "; ";
    html << fmt::format(
        "<tr class={}><td>{}</td><td>{}</td><td>{}</td><td>{:.0f}</td><td>{:.2f}</td>"
        "<td>{} ({})</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td>"
        "<td style=text-align:left>{}</td></tr>\n",
        run.verdict.pass ? "pass" : "fail", soak_label(run.strategy, run.gpu),
        run.verdict.pass ? "PASS" : "FAIL", run.frames,
        run.wall_s > 0 ? static_cast<double>(run.frames) / run.wall_s : 0, median(p99),
        pct(run.verdict.memory_growth), run.verdict.memory_metric, pct(run.verdict.rss_growth),
        pct(run.verdict.p99_drift), probe_max, retries, run.verdict.failures, why);
  }
  html << "</table>\n";
  for (const auto& f : charts) html << fmt::format("<img src=\"{}\" alt=\"{}\">\n", f, f);
  html << "<p>Data: <a href=samples.csv>samples.csv</a>, <a href=soak.json>soak.json</a>.</p>\n";
  vpipe::write_file((dir / "report.html").string(), html.str(), "the soak's page");
}

}  // namespace

void write_soak_outputs(const SoakResult& r, const SoakOptions& o) {
  if (o.out_dir.empty()) return;
  fs::create_directories(o.out_dir);
  const fs::path dir(o.out_dir);
  vpipe::write_file((dir / "soak.json").string(), vpipe::json_text(r.to_json(o), 2) + '\n',
                    "the soak's JSON");
  write_html_report(r, o, dir, write_charts(r, dir));
}

std::string prometheus_text(const std::vector<SoakSample>& latest) {
  std::string out;
  for (const auto& g : sample_fields()) {
    if (!g.gauge) continue;
    std::string lines;
    for (const auto& s : latest)
      if (const auto v = g.get(s))
        lines += fmt::format("{}{{strategy=\"{}\"{}}} {}\n", g.gauge, s.strategy,
                             s.gpu < 0 ? std::string() : fmt::format(",gpu=\"{}\"", s.gpu), *v);
    if (lines.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}", g.gauge, g.help, g.gauge, lines);
  }
  return out;
}

}  // namespace vpipe
