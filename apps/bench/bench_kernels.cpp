// vpipe bench kernels: each CUDA kernel timed with CUDA events (median over
// batches of back-to-back runs, after warm-up) at 1080p and 4K. Achieved bandwidth counts each byte
// read and written once, and is compared with the peak of a 1 GiB
// device-to-device cudaMemcpy measured in the same run (read + write), and
// with a frame-sized copy. Goals, against the peak (issue #20): ≥ 80 % for
// pointwise, colour and copy-like kernels, ≥ 60 % for resizes and fused passes,
// ≥ 50 % for neighbourhood kernels. The fused NV12 → resized RGBA pass is timed
// against the same work as separate launches. At 1080p the goal is measured on
// whole CUDA segments of typical chains (chain_segments): the real filters,
// back to back on one stream and as one CUDA graph, against the bytes the
// segment must move (its input frame read once, its output written once).
#include "bench_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/cuda_event.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/io/paths.hpp"

namespace vpipe::bench {

namespace {

struct DevPlane {
  PlaneView v{};
  DevPlane(int w, int h, int ch) {
    void* p = nullptr;
    std::size_t pitch = 0;
    VPIPE_CUDA_TRY(
        cudaMallocPitch(&p, &pitch, static_cast<std::size_t>(w * ch), static_cast<std::size_t>(h)));
    VPIPE_CUDA_TRY(cudaMemset2D(p, pitch, 0x80, static_cast<std::size_t>(w * ch),
                                static_cast<std::size_t>(h)));
    v = {static_cast<std::uint8_t*>(p), w, h, ch, pitch};
  }
  ~DevPlane() { cudaFree(v.data); }
  DevPlane(const DevPlane&) = delete;
  DevPlane& operator=(const DevPlane&) = delete;
  [[nodiscard]] std::size_t bytes() const {
    return v.row_bytes() * static_cast<std::size_t>(v.height);
  }
};

// How each case is run: `samples` batches of `batch` runs back to back (as a pipeline enqueues
// them, so launch latency is amortized rather than measured) after `warmup` runs; --once runs
// each case a single time, for a profiler.
struct Sampling {
  int samples = 50, batch = 10, warmup = 3;
};

// Median time in ms of one `run` over the batches.
double median_ms(const std::function<void()>& run, cudaStream_t s, const Sampling& how) {
  for (int i = 0; i < how.warmup; ++i) run();
  std::vector<float> t;
  CudaEvent a(CudaEvent::Timing::kOn), b(CudaEvent::Timing::kOn);
  for (int i = 0; i < how.samples; ++i) {
    a.record(s);
    for (int k = 0; k < how.batch; ++k) run();
    b.record(s);
    t.push_back(b.elapsed_ms_since(a) / static_cast<float>(how.batch));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Goals against the peak copy (issue #20): one place for each class of kernel.
constexpr double kPointwiseGoal = 0.8, kResizeGoal = 0.6, kNeighbourhoodGoal = 0.5;

// A chain's CUDA segment on a 1080p NV12 frame: each filter's process_cuda back to back on
// the stream (as the CUDA stage runs them), and the same captured once as a CUDA graph.
struct SegmentRun {
  double launches_ms = 0, graph_ms = 0;
  std::size_t must_move = 0;  // input frame read once + output frame written once
  int filters = 0;
};

// `run` captured once on `s` (ended and discarded if it throws) and instantiated; destroyed with
// the object.
struct SegmentGraph {
  cudaGraphExec_t exec = nullptr;
  SegmentGraph(const std::function<void()>& run, cudaStream_t s) {
    cudaGraph_t graph = nullptr;
    VPIPE_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      run();
    } catch (...) {
      cudaStreamEndCapture(s, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    VPIPE_CUDA_TRY(cudaStreamEndCapture(s, &graph));
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    VPIPE_CUDA_TRY(made);
  }
  ~SegmentGraph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
  SegmentGraph(const SegmentGraph&) = delete;
  SegmentGraph& operator=(const SegmentGraph&) = delete;
};

// The pixels of a frame (pitch padding not counted).
std::size_t pixel_bytes(const Frame& f) {
  std::size_t n = 0;
  for (int p = 0; p < f.num_planes; ++p)
    n += f.planes[static_cast<std::size_t>(p)].row_bytes() *
         static_cast<std::size_t>(f.planes[static_cast<std::size_t>(p)].height);
  return n;
}

SegmentRun time_segment(const std::string& spec, cudaStream_t s, DeviceMemoryResource& mr,
                        const Sampling& how) {
  const FrameFormat in_fmt{AV_PIX_FMT_NV12, 1920, 1080};
  auto chain = build_chain(parse_chain(spec), in_fmt);
  for (bool cuda : cuda_steps(chain))
    VPIPE_EXPECTS(cuda, "bench kernels: every step of a segment must run on the GPU: " + spec);
  std::vector<Frame> frames;
  frames.push_back(Frame::allocate_device(in_fmt, mr, s));
  for (int p = 0; p < frames.back().num_planes; ++p) {
    const PlaneView& v = frames.back().planes[static_cast<std::size_t>(p)];
    VPIPE_CUDA_TRY(cudaMemset2DAsync(v.data, v.pitch, 0x80, v.row_bytes(),
                                     static_cast<std::size_t>(v.height), s));
  }
  for (auto& f : chain) frames.push_back(Frame::allocate_device(f.out, mr, s));
  const CudaContext ctx{s, mr};
  auto run = [&] {
    for (std::size_t i = 0; i < chain.size(); ++i)
      chain[i].filter->process_cuda(frames[i], frames[i + 1], ctx);
  };
  SegmentRun r;
  r.filters = static_cast<int>(chain.size());
  r.must_move = pixel_bytes(frames.front()) + pixel_bytes(frames.back());
  r.launches_ms = median_ms(run, s, how);
  const SegmentGraph graph(run, s);
  r.graph_ms = median_ms([&] { VPIPE_CUDA_TRY(cudaGraphLaunch(graph.exec, s)); }, s, how);
  VPIPE_CUDA_TRY(cudaStreamSynchronize(s));
  return r;
}

// The 1080p goal on whole segments: the typical chain of issue #20 and a five-filter one. A
// segment mixes kernel classes; it is held to the lowest goal, the neighbourhood kernels'.
void chain_segments(cudaStream_t s, DeviceMemoryResource& mr, const Sampling& how, double peak_gbps,
                    nlohmann::json& rows, bool& all_met) {
  fmt::print(
      "\n## 1080p chain segments (NV12 in; the bytes it must move: the input read once, the "
      "output written once)\n\n| chain | filters | must move (MB) | launches µs | % of peak | "
      "graph µs | % of peak | goal | met |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const char* spec : {"resize=1280x720,blur=sigma=1.5,eq=contrast=1.1,format=rgb24",
                           "resize=1280x720,blur=sigma=1.5,eq=contrast=1.1,unsharp,format=rgb24"}) {
    const SegmentRun r = time_segment(spec, s, mr, how);
    auto pct = [&](double ms) {
      return static_cast<double>(r.must_move) / (ms * 1e-3) / 1e9 / peak_gbps;
    };
    const double best = std::max(pct(r.launches_ms), pct(r.graph_ms));
    const bool met = best >= kNeighbourhoodGoal;
    all_met &= met;
    fmt::print("| {} | {} | {:.2f} | {:.1f} | {:.0f} % | {:.1f} | {:.0f} % | {:.0f} % | {} |\n",
               spec, r.filters, static_cast<double>(r.must_move) / 1e6, r.launches_ms * 1e3,
               100 * pct(r.launches_ms), r.graph_ms * 1e3, 100 * pct(r.graph_ms),
               100 * kNeighbourhoodGoal, met ? "yes" : "NO");
    rows.push_back({{"resolution", "1080p"},
                    {"segment", spec},
                    {"filters", r.filters},
                    {"must_move_bytes", r.must_move},
                    {"launches_us", r.launches_ms * 1e3},
                    {"graph_us", r.graph_ms * 1e3},
                    {"pct_launches", pct(r.launches_ms)},
                    {"pct_graph", pct(r.graph_ms)},
                    {"goal", kNeighbourhoodGoal},
                    {"met", met},
                    {"peak_copy_gbps", peak_gbps}});
  }
}

}  // namespace

namespace {

// Peak copy bandwidth: 1 GiB device to device, read + write counted.
double peak_copy_gbps(cudaStream_t s, const KernelBenchOptions& o) {
  const std::size_t big = std::size_t{1} << 30;
  const DevPlane a(static_cast<int>(big >> 10), 1 << 10, 1),
      b(static_cast<int>(big >> 10), 1 << 10, 1);
  const double ms = median_ms(
      [&] {
        VPIPE_CUDA_TRY(cudaMemcpyAsync(b.v.data, a.v.data, big, cudaMemcpyDeviceToDevice, s));
      },
      s,
      Sampling{o.once    ? 1
               : o.quick ? 5
                         : 20,
               1, o.once ? 0 : 3});
  return 2.0 * static_cast<double>(big) / (ms * 1e-3) / 1e9;
}

// Every plane the cases of one resolution read or write.
struct CasePlanes {
  int w, h;
  DevPlane y{w, h, 1}, uv{w / 2, h / 2, 2}, u{w / 2, h / 2, 1}, v{w / 2, h / 2, 1};
  DevPlane rgba{w, h, 4}, rgb{w, h, 3}, rgba2{w, h, 4}, y2{w, h, 1}, uv2{w / 2, h / 2, 2};
  DevPlane small_y{w / 2, h / 2, 1}, small_uv{w / 4, h / 4, 2}, small_rgba{w / 2, h / 2, 4};
  DevPlane y16{w, h, 2}, uv16{w / 2, h / 2, 4}, mark{256, 256, 4}, letter{w, h * 3 / 4, 1};
  // Two thirds (1080p → 720p, 4K → 1440p): a ratio without the half-size fast paths.
  int tw = w * 2 / 3, th = h * 2 / 3;
  DevPlane third_y{tw, th, 1}, third_uv{tw / 2, th / 2, 2}, third_rgba{tw, th, 4};
  // What the cases read besides the planes: here, as the planes, so that it outlives them.
  PlaneView nv12_in[2] = {y.v, uv.v}, half_out[2] = {small_y.v, small_uv.v},
            third_out[2] = {third_y.v, third_uv.v};
  ColorSpec spec{};
  std::uint8_t lut[256];
  CasePlanes(int width, int height) : w(width), h(height) { ref::make_eq_lut(0.05, 1.2, 1.1, lut); }
};

struct Case {
  std::string name;
  std::size_t bytes;  // read + written
  double goal;
  std::function<void()> run;
};

// Over 80 lines: the table of cases, one entry per kernel.
std::vector<Case> kernel_cases(CasePlanes& p, DeviceMemoryResource& scratch, cudaStream_t s) {
  // Plain references, not a structured binding: clang before 16 (the fuzz build) cannot
  // capture a binding in the lambdas below.
  auto& h = p.h;
  auto& y = p.y;
  auto& uv = p.uv;
  auto& u = p.u;
  auto& v = p.v;
  auto& rgba = p.rgba;
  auto& rgb = p.rgb;
  auto& rgba2 = p.rgba2;
  auto& y2 = p.y2;
  auto& uv2 = p.uv2;
  auto& small_y = p.small_y;
  auto& small_uv = p.small_uv;
  auto& small_rgba = p.small_rgba;
  auto& y16 = p.y16;
  auto& uv16 = p.uv16;
  auto& mark = p.mark;
  auto& letter = p.letter;
  auto& third_y = p.third_y;
  auto& third_uv = p.third_uv;
  auto& third_rgba = p.third_rgba;
  const std::size_t nv12 = y.bytes() + uv.bytes();
  auto& nv12_in = p.nv12_in;
  auto& half_out = p.half_out;
  auto& third_out = p.third_out;
  auto& spec = p.spec;
  auto& lut = p.lut;
  // The stream is copied into each case, which outlives this function; all else is `p`'s, which
  // outlives the cases.
  return {
      {"nv12_to_rgb (RGBA out)", nv12 + rgba.bytes(), kPointwiseGoal,
       [&, s] { cuda::nv12_to_rgb(y.v, uv.v, rgba.v, spec, s); }},
      {"yuv420p_to_rgb (RGB out)", nv12 + rgb.bytes(), kPointwiseGoal,
       [&, s] { cuda::yuv420p_to_rgb(y.v, u.v, v.v, rgb.v, spec, s); }},
      {"rgb_to_nv12 (RGBA in)", rgba.bytes() + nv12, kPointwiseGoal,
       [&, s] { cuda::rgb_to_nv12(rgba.v, y2.v, uv2.v, spec, s); }},
      {"invert (RGBA plane)", 2 * rgba.bytes(), kPointwiseGoal,
       [&, s] { cuda::invert_plane(rgba.v, rgba2.v, s); }},
      {"lut: brightness/contrast/gamma (RGBA plane)", 2 * rgba.bytes(), kPointwiseGoal,
       [&, s] { cuda::lut_plane(rgba.v, rgba2.v, lut, s); }},
      {"flip h (RGBA plane)", 2 * rgba.bytes(), kPointwiseGoal,
       [&, s] { cuda::flip_plane(rgba.v, rgba2.v, true, false, s); }},
      // resize_planes: the resize filter's call, one launch for both planes
      {"resize NV12 → half, bilinear (Y + UV)", nv12 + small_y.bytes() + small_uv.bytes(),
       kResizeGoal,
       [&, s] { cuda::resize_planes(nv12_in, half_out, 2, ref::Interp::kBilinear, s); }},
      {"resize NV12 → half, area (Y + UV)", nv12 + small_y.bytes() + small_uv.bytes(), kResizeGoal,
       [&, s] { cuda::resize_planes(nv12_in, half_out, 2, ref::Interp::kArea, s); }},
      {"resize NV12 → 2/3, area (Y + UV)", nv12 + third_y.bytes() + third_uv.bytes(), kResizeGoal,
       [&, s] { cuda::resize_planes(nv12_in, third_out, 2, ref::Interp::kArea, s); }},
      {"gaussian blur σ=1.5 (Y plane)", 2 * y.bytes(), kNeighbourhoodGoal,
       [&, s] { cuda::gaussian_blur_plane(y.v, y2.v, 1.5, scratch, s); }},
      {"gaussian blur σ=1.5 (RGBA plane)", 2 * rgba.bytes(), kNeighbourhoodGoal,
       [&, s] { cuda::gaussian_blur_plane(rgba.v, rgba2.v, 1.5, scratch, s); }},
      {"box blur r=3 (Y plane)", 2 * y.bytes(), kNeighbourhoodGoal,
       [&, s] { cuda::box_blur_plane(y.v, y2.v, 3, scratch, s); }},
      {"unsharp σ=1.2 amount 0.8 (Y plane)", 2 * y.bytes(), kNeighbourhoodGoal,
       [&, s] { cuda::unsharp_plane(y.v, y2.v, 1.2, 0.8, scratch, s); }},
      {"sobel (Y plane)", 2 * y.bytes(), kNeighbourhoodGoal,
       [&, s] { cuda::sobel_plane(y.v, y2.v, s); }},
      {"pad: letterbox a 4:3-high Y plane", letter.bytes() + y.bytes(), kPointwiseGoal,
       [&, s] { cuda::pad_plane(letter.v, y2.v, 0, h / 8, 16, s); }},
      {"overlay 256×256 RGBA mark on RGBA", 2 * rgba.bytes() + mark.bytes(), kPointwiseGoal,
       [&, s] { cuda::overlay_rgba(rgba.v, mark.v, rgba2.v, 64, 64, 0.8f, s); }},
      {"p010_to_rgb (RGBA out)", y16.bytes() + uv16.bytes() + rgba.bytes(), kPointwiseGoal,
       [&, s] { cuda::p010_to_rgb(y16.v, uv16.v, rgba.v, spec, s); }},
      {"fused: NV12 → half-size RGBA, one pass", nv12 + small_rgba.bytes(), kResizeGoal,
       [&, s] {
         cuda::nv12_resize_to_rgb(y.v, uv.v, small_rgba.v, spec, ref::Interp::kBilinear, s);
       }},
      {"chain: resize Y, resize UV, then NV12 → RGBA", nv12 + small_rgba.bytes(), kResizeGoal,
       [&, s] {
         cuda::resize_plane(y.v, small_y.v, ref::Interp::kBilinear, s);
         cuda::resize_plane(uv.v, small_uv.v, ref::Interp::kBilinear, s);
         cuda::nv12_to_rgb(small_y.v, small_uv.v, small_rgba.v, spec, s);
       }},
      {"fused: NV12 → 2/3-size RGBA, one pass", nv12 + third_rgba.bytes(), kResizeGoal,
       [&, s] {
         cuda::nv12_resize_to_rgb(y.v, uv.v, third_rgba.v, spec, ref::Interp::kBilinear, s);
       }},
      {"chain: the same at 2/3 size", nv12 + third_rgba.bytes(), kResizeGoal,
       [&, s] {
         cuda::resize_plane(y.v, third_y.v, ref::Interp::kBilinear, s);
         cuda::resize_plane(uv.v, third_uv.v, ref::Interp::kBilinear, s);
         cuda::nv12_to_rgb(third_y.v, third_uv.v, third_rgba.v, spec, s);
       }},
      // area (the default when shrinking): luma averaged over 1.5 × 1.5 footprints
      {"fused area: NV12 → 2/3-size RGBA, one pass", nv12 + third_rgba.bytes(), kResizeGoal,
       [&, s] { cuda::nv12_resize_to_rgb(y.v, uv.v, third_rgba.v, spec, ref::Interp::kArea, s); }},
      {"chain area: the same at 2/3 size", nv12 + third_rgba.bytes(), kResizeGoal,
       [&, s] {
         cuda::resize_plane(y.v, third_y.v, ref::Interp::kArea, s);
         cuda::resize_plane(uv.v, third_uv.v, ref::Interp::kArea, s);
         cuda::nv12_to_rgb(third_y.v, third_uv.v, third_rgba.v, spec, s);
       }},
  };
}

// Times every case of one resolution: a row each on stdout and in `rows`; false when a goal is
// missed. The chain cases are comparisons, not goals.
bool time_cases(const std::vector<Case>& cases, const char* res, double peak_gbps,
                double frame_copy_gbps, cudaStream_t s, const Sampling& how, nlohmann::json& rows) {
  bool all_met = true;
  std::vector<double> fused_us, chain_us;  // in pairs: half size, two thirds, two thirds area
  for (const auto& c : cases) {
    const double ms = median_ms(c.run, s, how);
    const double gbps = static_cast<double>(c.bytes) / (ms * 1e-3) / 1e9;
    const double pct = gbps / peak_gbps;
    const bool met = pct >= c.goal, comparison = c.name.rfind("chain", 0) == 0;
    all_met &= met || comparison;
    if (c.name.rfind("fused", 0) == 0) fused_us.push_back(ms * 1e3);
    if (comparison) chain_us.push_back(ms * 1e3);
    fmt::print("| {} | {:.1f} | {:.0f} | {:.0f} % | {:.0f} % | {:.0f} % | {} |\n", c.name, ms * 1e3,
               gbps, 100 * pct, 100 * gbps / frame_copy_gbps, 100 * c.goal,
               comparison ? "(comparison)"
               : met      ? "yes"
                          : "NO");
    rows.push_back({{"resolution", res},
                    {"kernel", c.name},
                    {"us", ms * 1e3},
                    {"gbps", gbps},
                    {"pct_of_peak_copy", pct},
                    {"goal", c.goal},
                    {"met", met},
                    {"peak_copy_gbps", peak_gbps},
                    {"frame_copy_gbps", frame_copy_gbps}});
  }
  const char* sizes[] = {"half size", "two thirds", "two thirds, area"};
  for (std::size_t i = 0; i < fused_us.size() && i < chain_us.size(); ++i)
    fmt::print(
        "{}Fused vs chain at {}, {}: {:.1f} µs vs {:.1f} µs (chain time ÷ fused time = {:.2f}).\n",
        i ? "" : "\n", res, sizes[i], fused_us[i], chain_us[i], chain_us[i] / fused_us[i]);
  return all_met;
}

// One resolution: a frame-sized copy for scale (small transfers cannot reach the peak either),
// then the cases.
bool bench_resolution(int w, int h, const char* res, double peak_gbps,
                      DeviceMemoryResource& scratch, cudaStream_t s, const Sampling& how,
                      nlohmann::json& rows) {
  CasePlanes planes{w, h};
  const std::size_t frame_bytes = planes.rgba.v.pitch * static_cast<std::size_t>(h);
  const double copy_ms = median_ms(
      [&] {
        VPIPE_CUDA_TRY(cudaMemcpyAsync(planes.rgba2.v.data, planes.rgba.v.data, frame_bytes,
                                       cudaMemcpyDeviceToDevice, s));
      },
      s, how);
  const double frame_copy_gbps = 2.0 * static_cast<double>(frame_bytes) / (copy_ms * 1e-3) / 1e9;
  fmt::print(
      "\n## {} ({}x{}): an RGBA-frame-sized copy ({:.1f} MB) runs at {:.0f} GB/s ({:.0f} % of "
      "peak)\n\n| kernel | µs | GB/s | % of peak copy | % of frame-sized copy | goal | met "
      "|\n|---|---|---|---|---|---|---|\n",
      res, w, h, static_cast<double>(frame_bytes) / 1e6, frame_copy_gbps,
      100 * frame_copy_gbps / peak_gbps);
  return time_cases(kernel_cases(planes, scratch, s), res, peak_gbps, frame_copy_gbps, s, how,
                    rows);
}

// The stream the bench runs on, destroyed with it.
struct BenchStream {
  cudaStream_t s{};
  BenchStream() { VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~BenchStream() { cudaStreamDestroy(s); }
  BenchStream(const BenchStream&) = delete;
  BenchStream& operator=(const BenchStream&) = delete;
};

}  // namespace

int run_kernel_bench(const KernelBenchOptions& o) {
  if (auto reason = cuda_unavailable_reason(); !reason.empty()) {
    fmt::print(stderr, "vpipe bench kernels: {}: nothing to measure\n", reason);
    return 1;  // the machine lacks what it needs: not a usage error
  }
  const auto sys = query_cuda_system();
  const Sampling how = o.once    ? Sampling{1, 1, 0}
                       : o.quick ? Sampling{10, 10, 3}
                                 : Sampling{50, 10, 3};
  const BenchStream stream;
  const cudaStream_t s = stream.s;
  auto scratch = make_strategy("pool");
  nlohmann::json rows = nlohmann::json::array();
  fmt::print(
      "# vpipe bench kernels\n\nDevice: {}; CUDA events around batches of {} back-to-back "
      "runs, median of {} batches, after {} warm-up runs{}.\n",
      sys.devices[0].name, how.batch, how.samples, how.warmup,
      o.once ? " (--once: each case run once, for a profiler; not a measurement)" : "");
  const double peak_gbps = peak_copy_gbps(s, o);
  fmt::print(
      "Peak device-to-device copy (1 GiB, read + write): {:.0f} GB/s. Goals are against this "
      "peak.\n",
      peak_gbps);
  bool all_met = true;
  for (auto [w, h, res] : {std::tuple{1920, 1080, "1080p"}, std::tuple{3840, 2160, "4K"}})
    all_met &= bench_resolution(w, h, res, peak_gbps, scratch.resource(), s, how, rows);
  chain_segments(s, scratch.resource(), how, peak_gbps, rows, all_met);
  if (!o.json_path.empty()) vpipe::write_file(o.json_path, rows.dump(2) + '\n', "the JSON");
  fmt::print("\nGoals: {}.\n", all_met ? "all met" : "NOT all met (see the 'met' column)");
  return all_met ? 0 : 1;
}

}  // namespace vpipe::bench
