// A view of one image plane: no ownership, explicit pitch, host or device.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vpipe {

struct PlaneView {
  std::uint8_t* data = nullptr;
  int width = 0;          // pixels
  int height = 0;         // rows
  int channels = 1;       // interleaved 8-bit samples per pixel (NV12's UV plane: 2)
  std::size_t pitch = 0;  // bytes from one row to the next (>= width * channels)

  [[nodiscard]] std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  }
  [[nodiscard]] std::uint8_t* row(int y) const noexcept {
    return data + static_cast<std::size_t>(y) * pitch;
  }
};

namespace ref {
// A resize's interpolation, for the kernels and their CPU references alike.
enum class Interp { kNearest, kBilinear, kArea };
}  // namespace ref

}  // namespace vpipe
