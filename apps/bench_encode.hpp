// The encoder alone, for the benches' bounds: the chain's output frames first
// collected in host memory (one transcode to null), then `encoder` (opened as
// transcode opens it) encodes them by itself, timed.
#pragma once

#include <cstdint>
#include <string>

#include "vpipe/pipeline/transcode.hpp"

namespace vpipe::bench {

// o: the transcode whose output frames are encoded (its output is ignored).
// A format conversion is added to the chain where the encoder cannot take
// NV12 (mpeg4), outside the timing. Returns frames per second.
[[nodiscard]] double encode_only_fps(TranscodeOptions o, const std::string& encoder,
                                     std::int64_t* frames_out);

}  // namespace vpipe::bench
