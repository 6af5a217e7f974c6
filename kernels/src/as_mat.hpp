// The CPU references' OpenCV view of a plane (internal: OpenCV stays out of
// vpipe::kernels' public headers).
#pragma once

#include <opencv2/core.hpp>

#include "vpipe/kernels/image.hpp"

namespace vpipe::ref {

// A cv::Mat header over the plane (no copy).
[[nodiscard]] cv::Mat as_mat(const PlaneView& plane);

}  // namespace vpipe::ref
