// One still picture from a file (PNG, JPEG, anything FFmpeg's image demuxers
// read), as a host RGBA frame: the overlay filter's watermark.
#pragma once

#include <string>

#include "vpipe/pipeline/graph/frame.hpp"

namespace vpipe {

// Throws input_error naming the file and the cause (missing, not a picture).
[[nodiscard]] Frame load_image_rgba(const std::string& path);

}  // namespace vpipe
