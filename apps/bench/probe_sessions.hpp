// What both raw decode probes share (decode_probe.cpp through FFmpeg,
// cuvid_probe.cpp through NVCUVID directly): the input's video packets read
// into memory, K sessions started together on their own threads, and the
// rates summed from each session's timing. Private to the library.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decode_probe.hpp"
#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe::probe {

using ProbeClock = std::chrono::steady_clock;

struct VideoPackets {
  UniqueDemuxContext input;
  AVStream* video = nullptr;
  std::vector<UniqueAVPacket> packets;
};

// Every video packet of `path`; input_error naming the file for one without video.
[[nodiscard]] VideoPackets read_video_packets(const std::string& path);

// One session's run: its frames and the clock at its warm and last frame.
struct SessionRun {
  std::int64_t frames = 0, errors = 0;
  ProbeClock::time_point warm, last;
  std::string failure;
  void count_frame() {  // a frame out: counted, not kept
    last = ProbeClock::now();
    if (++frames == DecodeProbeResult::kWarmUpFrames) warm = last;
  }
};

// Runs body(k, run) for k < count, each on its own thread with `device`
// current (device < 0: no CUDA), all released together; throws input_error
// naming `input` for a session that failed.
[[nodiscard]] DecodeProbeResult run_together(
    const std::string& input, std::size_t count, int device,
    const std::function<void(std::size_t, SessionRun&)>& body);

}  // namespace vpipe::probe
