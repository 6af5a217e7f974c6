// The raw decode rate of this machine (issue #21): K decoder sessions, each
// in its own thread, each decoding every video packet of one input (read
// into memory first), frames dropped as they come out. No demux, filters,
// queues or output: the ceiling that `--streams K` and `--decode-sessions K`
// are measured against. Opening the decoders is not timed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe {

struct DecodeProbeOptions {
  std::string input;
  int sessions = 1;
  Decode decode = Decode::kNvdec;  // kNvdec or kCpu
  int loop = 1;                    // each session sends the packets N times over (no flush)
  int decode_threads = 0;          // FFmpeg's threads each (0: decoder_threads())
  // With kNvdec: FFmpeg's hwaccel or its cuvid decoders (auto: the hwaccel, as transcode's
  // auto for one decoder of one file).
  NvdecApi nvdec_api = NvdecApi::kHwaccel;
  // NVCUVID directly (cuvid_probe.cpp: NVIDIA's parser and decoder, each frame
  // mapped and unmapped), not FFmpeg's NVDEC hwaccel: the engines' own ceiling.
  bool raw = false;
};

struct DecodeProbeResult {
  int sessions = 0;
  std::int64_t frames = 0;  // all sessions
  std::int64_t errors = 0;  // packets refused, frames lost or flagged corrupt
  double wall_s = 0;        // the sessions start together → the last one's last frame
  double fps = 0;           // frames / wall_s
  // Per session, frames after its first kWarmUpFrames over the time from that
  // frame to its last (the hardware decoder is made on the first packet),
  // summed over the sessions.
  double steady_fps = 0;
  std::vector<double> session_fps;  // each session's steady rate
  static constexpr std::int64_t kWarmUpFrames = MediaCounters::kWarmUpFrames;
  [[nodiscard]] nlohmann::json to_json() const;
};

// Throws input_error for an input without video, or one NVDEC refuses
// (--decode nvdec), naming the file. options.raw: probe_decode_nvcuvid.
[[nodiscard]] DecodeProbeResult probe_decode(const DecodeProbeOptions& options);

// The raw probe through NVCUVID (libnvcuvid, loaded at run time through the
// ffnvcodec headers): H.264, HEVC (8- and 10-bit, 4:2:0 and 4:4:4) and MPEG-2.
// Throws input_error naming the file for another codec or one the GPU refuses,
// and cuda_error where the driver has no NVCUVID.
[[nodiscard]] DecodeProbeResult probe_decode_nvcuvid(const DecodeProbeOptions& options);

}  // namespace vpipe
