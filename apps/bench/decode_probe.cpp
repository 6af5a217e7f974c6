#include "decode_probe.hpp"

#include "probe_sessions.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <latch>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/filters/cuda_stages.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/parallel/segment_decode.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe {

namespace probe {

VideoPackets read_video_packets(const std::string& path) {
  VideoPackets p;
  try {
    p.input = open_input(path);
  } catch (const ffmpeg_error& e) {
    throw input_error(e.what());
  }
  const int v = video_stream(*p.input, path);
  p.video = p.input->streams[v];
  for (;;) {
    UniqueAVPacket pkt = make_av_packet();
    if (av_read_frame(p.input.get(), pkt.get()) < 0) break;
    if (pkt->stream_index == v) p.packets.push_back(std::move(pkt));
  }
  if (p.packets.empty()) throw input_error(fmt::format("{}: no video packets", path));
  return p;
}

namespace {

DecodeProbeResult summarize(const std::vector<SessionRun>& runs, ProbeClock::time_point start) {
  DecodeProbeResult r;
  r.sessions = static_cast<int>(runs.size());
  ProbeClock::time_point end = start;
  for (const auto& run : runs) {
    r.frames += run.frames;
    r.errors += run.errors;
    end = std::max(end, run.last);
    const double s = std::chrono::duration<double>(run.last - run.warm).count();
    r.session_fps.push_back(run.frames > DecodeProbeResult::kWarmUpFrames && s > 0
                                ? static_cast<double>(run.frames - r.kWarmUpFrames) / s
                                : 0.0);
  }
  r.wall_s = std::chrono::duration<double>(end - start).count();
  r.fps = r.wall_s > 0 ? static_cast<double>(r.frames) / r.wall_s : 0;
  r.steady_fps = std::accumulate(r.session_fps.begin(), r.session_fps.end(), 0.0);
  return r;
}

}  // namespace

DecodeProbeResult run_together(const std::string& input, std::size_t count, int device,
                               const std::function<void(std::size_t, SessionRun&)>& body) {
  std::vector<SessionRun> runs(count);
  std::latch ready(static_cast<std::ptrdiff_t>(count) + 1);
  std::vector<std::jthread> threads;
  for (std::size_t k = 0; k < count; ++k)
    threads.emplace_back([&, k] {
      if (device >= 0) (void)cudaSetDevice(device);
      ready.arrive_and_wait();
      try {
        body(k, runs[k]);
      } catch (const std::exception& e) {
        runs[k].failure = e.what();
      }
    });
  const auto start = ProbeClock::now();
  ready.arrive_and_wait();
  threads.clear();  // joins
  for (const auto& run : runs)
    if (!run.failure.empty()) throw input_error(fmt::format("{}: {}", input, run.failure));
  return summarize(runs, start);
}

}  // namespace probe

namespace {

void decode_all(DecoderSession& s, const std::vector<UniqueAVPacket>& packets, int loop,
                probe::SessionRun& run) {
  const auto count = [&](UniqueAVFrame frame) {
    if (s.nvdec && frame->format != AV_PIX_FMT_CUDA)
      throw std::runtime_error(fmt::format("NVDEC was refused: {}", s.nvdec->refusal()));
    run.count_frame();
  };
  for (int l = 0; l < loop; ++l)
    for (const auto& p : packets) decode_packet(s, p.get(), run.errors, count);
  decode_packet(s, nullptr, run.errors, count);
  if (s.nvdec) VPIPE_CUDA_TRY(cudaStreamSynchronize(s.nvdec->stream()));
  run.last = probe::ProbeClock::now();
}

// What the sessions use, declared in the order they must die: the decoders
// (their frames hold pool buffers) before the streams and the strategy.
struct ProbeParts {
  std::optional<MemoryStrategy> strategy;
  StreamSet streams;
  std::vector<DecoderSession> sessions;
};

}  // namespace

nlohmann::json DecodeProbeResult::to_json() const {
  return {{"sessions", sessions},      {"frames", frames}, {"errors", errors},
          {"wall_s", wall_s},          {"fps", fps},       {"steady_fps", steady_fps},
          {"session_fps", session_fps}};
}

DecodeProbeResult probe_decode(const DecodeProbeOptions& options) {
  if (options.raw) return probe_decode_nvcuvid(options);
  probe::VideoPackets in = probe::read_video_packets(options.input);
  TranscodeOptions o;
  o.input = options.input;
  o.decode_threads = options.decode_threads;
  o.nvdec_api = options.nvdec_api;
  const bool nvdec = options.decode == Decode::kNvdec;
  if (nvdec)
    if (auto why = nvdec_unsupported_reason(in.video->codecpar); !why.empty())
      throw input_error(fmt::format("{}: NVDEC cannot decode it: {}", options.input, why));
  ProbeParts parts;
  if (nvdec) parts.strategy.emplace(make_strategy("pool"));
  for (int k = 0; k < std::max(1, options.sessions); ++k) {
    DecoderSession s;
    if (nvdec) {
      s.nvdec = std::make_unique<NvdecContext>(parts.strategy->resource(), parts.streams.make());
      s.context = open_decoder(in.video, o, s.nvdec.get(), kNvdecFramesHeldCopying);
    } else {
      s.context = open_decoder(in.video, o);
    }
    parts.sessions.push_back(std::move(s));
  }
  int device = -1;
  if (nvdec) VPIPE_CUDA_TRY(cudaGetDevice(&device));
  return probe::run_together(
      options.input, parts.sessions.size(), device, [&](std::size_t k, probe::SessionRun& run) {
        decode_all(parts.sessions[k], in.packets, std::max(1, options.loop), run);
      });
}

}  // namespace vpipe
