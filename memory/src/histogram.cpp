#include "vpipe/memory/histogram.hpp"

#include <bit>

namespace vpipe {

int Histogram::bucket_of(std::uint64_t value) noexcept {
  constexpr std::uint64_t kSub = 1u << kSubBits;
  if (value < kSub) return static_cast<int>(value);  // exact below 32
  const int msb = 63 - std::countl_zero(value);      // >= kSubBits
  const int shift = msb - kSubBits;
  const auto sub = static_cast<int>((value >> shift) & (kSub - 1));
  const int bucket = ((shift + 1) << kSubBits) + sub;
  return bucket < kBuckets ? bucket : kBuckets - 1;
}

std::uint64_t Histogram::bucket_upper(int bucket) noexcept {
  constexpr int kSub = 1 << kSubBits;
  if (bucket < kSub) return static_cast<std::uint64_t>(bucket);
  const int shift = (bucket >> kSubBits) - 1;
  const auto sub = static_cast<std::uint64_t>(bucket & (kSub - 1));
  // Values v with (v >> shift) == kSub + sub: upper bound is the next start - 1.
  return (((kSub + sub + 1) << shift) - 1);
}

void Histogram::record(std::uint64_t value) noexcept {
  buckets_[static_cast<std::size_t>(bucket_of(value))].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  auto lo = min_.load(std::memory_order_relaxed);
  while (value < lo && !min_.compare_exchange_weak(lo, value, std::memory_order_relaxed)) {
  }
  auto hi = max_.load(std::memory_order_relaxed);
  while (value > hi && !max_.compare_exchange_weak(hi, value, std::memory_order_relaxed)) {
  }
}

std::uint64_t Histogram::percentile(double q) const noexcept {
  const auto n = count();
  if (n == 0) return 0;
  if (q <= 0) return min();
  if (q >= 1) return max();
  const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n - 1)) + 1;
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[static_cast<std::size_t>(b)].load(std::memory_order_relaxed);
    if (seen >= rank) {
      const auto upper = bucket_upper(b);
      return upper < max() ? upper : max();
    }
  }
  return max();
}

std::uint64_t Histogram::min() const noexcept {
  return count() == 0 ? 0 : min_.load(std::memory_order_relaxed);
}

double Histogram::mean() const noexcept {
  const auto n = count();
  return n == 0
             ? 0.0
             : static_cast<double>(sum_.load(std::memory_order_relaxed)) / static_cast<double>(n);
}

void Histogram::reset() noexcept {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_ = 0;
  sum_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
}

void Histogram::merge(const Histogram& other) noexcept {
  for (int b = 0; b < kBuckets; ++b) {
    const auto n = other.buckets_[static_cast<std::size_t>(b)].load(std::memory_order_relaxed);
    if (n) buckets_[static_cast<std::size_t>(b)].fetch_add(n, std::memory_order_relaxed);
  }
  count_.fetch_add(other.count(), std::memory_order_relaxed);
  sum_.fetch_add(other.sum_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  if (other.count()) {
    auto lo = min_.load();
    while (other.min() < lo && !min_.compare_exchange_weak(lo, other.min())) {
    }
    auto hi = max_.load();
    while (other.max() > hi && !max_.compare_exchange_weak(hi, other.max())) {
    }
  }
}

}  // namespace vpipe
