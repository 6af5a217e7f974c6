// `vpipe bench chain`: per chain × streams × repeat, the two modes one after
// the other (off, then on), each `transcode --streams N` to null:
//
//   steady fps   the streams' frames after their first 30, summed;
//   stage µs     the CUDA filter stages' time in process() per frame written,
//                all streams: allocations, launches or graph updates, and the
//                waits of a launch on a full launch queue once the GPU is behind;
//   GPU µs       the chain's GPU time per frame: the CUDA filter stages'
//                sampled timing events (GpuTimer) summed over the stages,
//                averaged over the streams (wall time on a shared GPU);
//   busiest      the stage whose threads were busiest per frame (summed over
//                the streams, over the frames written): what binds the run
//                when it is not the GPU;
//   graph note   launches, captures, refused updates (--graphs on).
#include "bench_chain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/session/multi_transcode.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe::bench {

namespace {

struct ModeRun {
  double steady_fps = 0, fps = 0, host_us_per_frame = 0, gpu_us_per_frame = 0;
  std::int64_t frames = 0, failed = 0;
  std::string graphs_note;
  std::string busiest;  // the stage name, and its busy µs per frame written
  double busiest_us_per_frame = 0;
};

ModeRun run_mode(const ChainBenchOptions& b, const std::string& chain, int streams, bool graphs) {
  TranscodeOptions o;
  o.input = b.input;
  o.output = "null";
  o.filters = chain;
  o.device = Device::kCuda;
  o.decode = from_name<Decode>(b.decode, "decode");
  o.mem = from_name<Strategy>(b.mem, "mem");
  o.loop = b.loop;
  o.graphs = graphs;
  o.streams = streams;
  const auto r = transcode_streams(o);
  ModeRun m;
  double host_s = 0, gpu_ms = 0;
  std::map<std::string, double> busy_s;  // per stage name, every stream's
  for (const auto& s : r.streams) {
    m.steady_fps += s.steady_fps;
    for (const auto& st : s.stages) {
      busy_s[st.name] += st.busy_s;
      if (st.name.rfind("cuda", 0) == 0) {
        host_s += st.busy_s;
        gpu_ms += st.gpu_ms_per_item.value_or(0);
      }
    }
    for (const auto& n : s.notes)
      if (n.rfind("graphs: ", 0) == 0 && m.graphs_note.empty()) m.graphs_note = n.substr(8);
  }
  for (const auto& f : r.failures) m.failed += f.empty() ? 0 : 1;
  m.frames = r.frames_written();
  m.fps = r.fps_total();
  m.host_us_per_frame = m.frames ? host_s / static_cast<double>(m.frames) * 1e6 : 0;
  m.gpu_us_per_frame = r.streams.empty() ? 0 : gpu_ms * 1e3 / static_cast<double>(r.streams.size());
  const auto top = std::max_element(busy_s.begin(), busy_s.end(), [](const auto& x, const auto& y) {
    return x.second < y.second;
  });
  if (top != busy_s.end() && m.frames) {
    m.busiest = top->first;
    m.busiest_us_per_frame = top->second / static_cast<double>(m.frames) * 1e6;
  }
  return m;
}

nlohmann::json to_json(const ModeRun& m) {
  return {{"steady_fps", m.steady_fps},
          {"fps", m.fps},
          {"host_us_per_frame", m.host_us_per_frame},
          {"gpu_us_per_frame", m.gpu_us_per_frame},
          {"frames", m.frames},
          {"failed", m.failed},
          {"graphs_note", m.graphs_note},
          {"busiest_stage", m.busiest},
          {"busiest_us_per_frame", m.busiest_us_per_frame}};
}

}  // namespace

int run_chain_bench(const ChainBenchOptions& b) {
  vpipe::check_side_file(b.json_path, "--json", b.input, "null");
  if (auto why = cuda_unavailable_reason(); !why.empty()) {
    fmt::print(stderr, "vpipe bench chain: {}\n", why);
    return 1;
  }
  (void)open_input(b.input);  // a bad input fails here, before the table starts
  fmt::print(
      "| chain | streams | repeat | launches: steady fps | graphs: steady fps | graphs ÷ "
      "launches | stage µs/frame, launches | stage µs/frame, graphs | GPU µs/frame, launches | GPU "
      "µs/frame, graphs | busiest stage µs/frame: launches; graphs | graph launches, captures, "
      "refused |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& chain : b.chains)
    for (const int n : b.streams)
      for (int rep = 1; rep <= b.repeat; ++rep) {
        const ModeRun off = run_mode(b, chain, n, false);
        const ModeRun on = run_mode(b, chain, n, true);
        const double ratio = off.steady_fps > 0 ? on.steady_fps / off.steady_fps : 0;
        fmt::print(
            "| {} | {} | {} | {:.0f} | {:.0f} | {:.2f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} "
            "{:.0f}; "
            "{} {:.0f} | {} |\n",
            chain, n, rep, off.steady_fps, on.steady_fps, ratio, off.host_us_per_frame,
            on.host_us_per_frame, off.gpu_us_per_frame, on.gpu_us_per_frame, off.busiest,
            off.busiest_us_per_frame, on.busiest, on.busiest_us_per_frame, on.graphs_note);
        std::fflush(stdout);
        rows.push_back({{"chain", chain},
                        {"streams", n},
                        {"repeat", rep},
                        {"launches", to_json(off)},
                        {"graphs", to_json(on)},
                        {"graphs_over_launches", ratio}});
      }
  fmt::print("\nInput: {} ×{}, decode {}, --mem {}, output null.\n", b.input, b.loop, b.decode,
             b.mem);
  if (!b.json_path.empty()) {
    vpipe::write_file(b.json_path,
                      nlohmann::json{{"input", b.input},
                                     {"loop", b.loop},
                                     {"decode", b.decode},
                                     {"mem", b.mem},
                                     {"rows", rows}}
                              .dump(2) +
                          '\n',
                      "the JSON");
  }
  return 0;
}

}  // namespace vpipe::bench
