// The encoder alone, for the benches' bounds: the chain's output frames first
// collected in host memory (one transcode to null), then `encoder` (opened as
// transcode opens it) encodes them by itself, timed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe::bench {

// The chain's output frames of transcode `o` (its output ignored), in host
// memory, converted to a format `encoder` takes (outside any timing).
[[nodiscard]] std::vector<Frame> collect_frames(TranscodeOptions o, const AVCodec* encoder);

// o: the transcode whose output frames are encoded (its output is ignored).
// A format conversion is added to the chain where the encoder cannot take
// NV12 (mpeg4), outside the timing. Returns frames per second.
[[nodiscard]] double encode_only_fps(TranscodeOptions o, const std::string& encoder,
                                     std::int64_t* frames_out);

// `vpipe bench encode` (issue #21): one encoder with every thread against K
// encoders, each on a GOP-aligned run of the frames with its share of the
// threads, joined into one stream. Every output is decoded back: frames and
// timestamps against the one-encoder output.
struct EncodeBenchOptions {
  std::string input;
  std::string filters = "resize=1280x720";
  std::string decode = "cpu";
  std::string encoder = "libx264";
  std::string preset;  // empty: vpipe's default for the encoder (libx264: veryfast)
  std::vector<int> segments{1, 2, 4, 8};
  int gop = 60;  // every output's keyframe interval; segments start on multiples of it
  int loop = 1;
  int repeat = 1;
  std::string out_dir;  // keep the outputs here (default: a temporary folder, removed)
  std::string json_path;
};

int run_encode_bench(const EncodeBenchOptions& options);

}  // namespace vpipe::bench
