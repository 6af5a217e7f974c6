#include <gtest/gtest.h>

#include <random>

#include "vpipe/memory/histogram.hpp"

using vpipe::Histogram;

TEST(Histogram, BucketsCoverEveryValueInOrder) {
  std::uint64_t prev_upper = 0;
  for (int b = 1; b < Histogram::kBuckets; ++b) {
    const auto upper = Histogram::bucket_upper(b);
    ASSERT_GT(upper, prev_upper) << b;
    ASSERT_EQ(Histogram::bucket_of(upper), b) << upper;
    ASSERT_EQ(Histogram::bucket_of(prev_upper + 1), b) << prev_upper + 1;
    prev_upper = upper;
  }
}

TEST(Histogram, PercentilesWithinBucketPrecision) {
  Histogram h;
  std::vector<std::uint64_t> values;
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(10.0, 1.5);  // ~22 µs median in ns
  for (int i = 0; i < 100000; ++i) {
    values.push_back(static_cast<std::uint64_t>(dist(rng)));
    h.record(values.back());
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto exact =
        static_cast<double>(values[static_cast<std::size_t>(q * (values.size() - 1))]);
    const auto est = static_cast<double>(h.percentile(q));
    EXPECT_NEAR(est / exact, 1.0, 0.04) << "q=" << q;
  }
  EXPECT_EQ(h.count(), values.size());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.percentile(1.0), values.back());
}

TEST(Histogram, MergeAndReset) {
  Histogram a, b;
  for (int i = 1; i <= 100; ++i) a.record(static_cast<std::uint64_t>(i));
  for (int i = 101; i <= 200; ++i) b.record(static_cast<std::uint64_t>(i));
  a.merge(b);
  EXPECT_EQ(a.count(), 200u);
  EXPECT_EQ(a.max(), 200u);
  EXPECT_EQ(a.min(), 1u);
  EXPECT_NEAR(a.mean(), 100.5, 1e-9);
  a.reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.percentile(0.5), 0u);
}
