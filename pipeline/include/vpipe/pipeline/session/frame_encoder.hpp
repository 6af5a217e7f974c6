// FrameEncoder: frames made anywhere (a C++ loop, a Python tensor) written
// to a video file, without a demuxer in front: the encoder transcode picks
// (choose_encoder, open_video_encoder), a swscale conversion to its pixel
// format, and, when asked, the audio of a source file copied across.
//
//   FrameEncoder enc({.path = "out.mp4", .frame_rate = {30, 1}});
//   for (...) enc.write(frame);        // host or device frames, any 8-bit layout
//   enc.close();                       // also done by the destructor
//
// The output is opened at the first frame (its size is the video's size) and
// finalized by close() or the destructor, so an exception or Ctrl-C in the
// caller's loop still leaves a playable file. The path is checked at
// construction: never the audio source, never a directory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "vpipe/pipeline/graph/frame.hpp"

namespace vpipe {

struct FrameEncoderOptions {
  std::string path;
  std::string encoder = "auto";  // as transcode's --encoder
  AVRational frame_rate{30, 1};
  AVRational time_base{0, 1};  // of the pts given to write(); {0,1}: 1/frame_rate
  std::optional<double> crf;   // as transcode's --crf, --preset and --qscale
  std::string preset;
  std::optional<int> qscale;
  std::string audio_from;  // copy this file's audio streams (empty: none)
};

struct FrameEncoderStats {
  std::int64_t frames = 0;
  std::int64_t packets = 0;  // video packets written
  std::int64_t audio_packets = 0;
  std::int64_t device_to_host_bytes = 0;  // device frames downloaded for a CPU encoder
};

class FrameEncoder {
 public:
  explicit FrameEncoder(FrameEncoderOptions options);
  ~FrameEncoder();  // close(), errors logged
  FrameEncoder(const FrameEncoder&) = delete;
  FrameEncoder& operator=(const FrameEncoder&) = delete;

  // Encodes one frame at `pts` (in options.time_base); none: the next
  // frame's time. Throws input_error when the size changes or pts does not
  // increase, ffmpeg_error when FFmpeg fails.
  void write(const Frame& frame, std::optional<std::int64_t> pts = std::nullopt);
  // Flushes the encoder, copies the rest of the audio, writes the trailer.
  // Idempotent. A run with no frame leaves no file.
  void close();
  [[nodiscard]] const FrameEncoderStats& stats() const;
  [[nodiscard]] std::string encoder_name() const;  // "" until the first frame

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vpipe
