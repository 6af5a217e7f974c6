// Log-linear latency histogram: constant memory, ~3 % relative precision,
// safe to record from many threads. Used for allocation latency and for
// per-frame pipeline latency, where runs last hours and samples can't be kept.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace vpipe {

class Histogram {
 public:
  // Values are unsigned integers (nanoseconds, by convention).
  void record(std::uint64_t value) noexcept;
  // The value below which `q` (0..1) of the samples fall, to bucket precision.
  [[nodiscard]] std::uint64_t percentile(double q) const noexcept;
  [[nodiscard]] std::uint64_t count() const noexcept {
    return count_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t min() const noexcept;
  [[nodiscard]] std::uint64_t max() const noexcept { return max_.load(std::memory_order_relaxed); }
  [[nodiscard]] double mean() const noexcept;
  void reset() noexcept;
  // Adds every sample of `other` into this one.
  void merge(const Histogram& other) noexcept;

  // 32 sub-buckets per power of two, up to 2^48 (~3 days in ns).
  static constexpr int kSubBits = 5;
  static constexpr int kBuckets = (48 - kSubBits + 1) << kSubBits;
  static int bucket_of(std::uint64_t value) noexcept;
  static std::uint64_t bucket_upper(int bucket) noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::uint64_t> min_{UINT64_MAX};
  std::atomic<std::uint64_t> max_{0};
};

}  // namespace vpipe
