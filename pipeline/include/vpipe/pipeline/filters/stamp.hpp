// Glass-to-glass latency: the `stamp` filter writes the wall-clock time into
// the picture (a row of 64 black/white cells across the top of the luma
// plane: 48 bits of microseconds, 16 of check), and a receiving vpipe reads
// it back from each frame just before encoding (--read-stamps). The cells
// are sized by the picture's width, so the stamp survives a lossy codec and
// a resize that keeps the aspect ratio. The clock is the system clock: exact
// on one machine (a loopback), as good as NTP between two.
#pragma once

#include <cstdint>
#include <optional>

#include "vpipe/kernels/image.hpp"

namespace vpipe {

// Microseconds of the system clock, modulo 2^48 (8.9 years).
[[nodiscard]] std::uint64_t stamp_clock_us();
// Writes `micros` into the top rows of a luma plane at least 128 pixels wide.
void write_stamp(const PlaneView& luma, std::uint64_t micros);
// The stamp in a luma plane, or nullopt where there is none (or its check fails).
[[nodiscard]] std::optional<std::uint64_t> read_stamp(const PlaneView& luma);
// now − stamp, in nanoseconds, handling the 2^48 wrap.
[[nodiscard]] std::int64_t stamp_age_ns(std::uint64_t stamp_us, std::uint64_t now_us);

}  // namespace vpipe
