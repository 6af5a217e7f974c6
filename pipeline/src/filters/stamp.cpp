#include "vpipe/pipeline/filters/stamp.hpp"

#include <algorithm>
#include <chrono>

namespace vpipe {

namespace {
constexpr int kCells = 64;
constexpr std::uint64_t kMask48 = (std::uint64_t{1} << 48) - 1;
std::uint64_t check16(std::uint64_t t) { return ((t ^ (t >> 16) ^ (t >> 32)) & 0xFFFF) ^ 0x5A5A; }
}  // namespace

std::uint64_t stamp_clock_us() {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return static_cast<std::uint64_t>(us) & kMask48;
}

void write_stamp(const PlaneView& luma, std::uint64_t micros) {
  const int cell = luma.width / kCells;
  if (cell < 2 || luma.height < cell || luma.channels != 1) return;
  const std::uint64_t t = micros & kMask48;
  const std::uint64_t word = t | (check16(t) << 48);
  for (int y = 0; y < cell; ++y) {
    std::uint8_t* row = luma.row(y);
    for (int i = 0; i < kCells; ++i)
      std::fill_n(row + i * cell, cell, ((word >> i) & 1) ? std::uint8_t{235} : std::uint8_t{16});
  }
}

std::optional<std::uint64_t> read_stamp(const PlaneView& luma) {
  if (luma.width < 2 * kCells || luma.channels != 1) return std::nullopt;
  const double cell = static_cast<double>(luma.width) / kCells;
  const int y = static_cast<int>(cell / 2);
  if (y + 1 >= luma.height) return std::nullopt;
  std::uint64_t word = 0;
  for (int i = 0; i < kCells; ++i) {
    const int x = static_cast<int>((i + 0.5) * cell);
    // The mean of a 2×2 block at the cell's centre, against mid-grey.
    const int sum =
        luma.row(y)[x] + luma.row(y)[x + 1] + luma.row(y + 1)[x] + luma.row(y + 1)[x + 1];
    if (sum > 4 * 128) word |= std::uint64_t{1} << i;
  }
  const std::uint64_t t = word & kMask48;
  if ((word >> 48) != check16(t)) return std::nullopt;
  return t;
}

std::int64_t stamp_age_ns(std::uint64_t stamp_us, std::uint64_t now_us) {
  const std::uint64_t d = (now_us - stamp_us) & kMask48;
  // A stamp from the "future" (clock skew between machines) shows as negative.
  const auto signed_d = d > kMask48 / 2
                            ? static_cast<std::int64_t>(d) - static_cast<std::int64_t>(kMask48 + 1)
                            : static_cast<std::int64_t>(d);
  return signed_d * 1000;
}

}  // namespace vpipe
