// Adaptors wrap an upstream resource and add one concern each (RMM's way):
// statistics, a budget, an allocation log. They forward to the upstream first,
// then do their bookkeeping under a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "vpipe/memory/device_resource.hpp"
#include "vpipe/memory/histogram.hpp"

namespace vpipe {

// {value, peak, total}: current value, its high-water mark, and the sum of all increments.
struct Counter {
  std::int64_t value = 0;
  std::int64_t peak = 0;
  std::int64_t total = 0;
  void add(std::int64_t n) {
    value += n;
    if (n > 0) total += n;
    if (value > peak) peak = value;
  }
};

struct AllocationStats {
  Counter bytes;
  Counter count;
  std::int64_t failures = 0;      // out_of_memory from upstream
  std::int64_t device_syncs = 0;  // device-wide synchronizations the strategy caused
};

// The base of every adaptor: everything forwards to the upstream, so an
// adaptor overrides only what its one concern changes (and cannot forget a
// query, as a hand-written forwarder once forgot deallocate_synchronizes_device).
class ResourceAdaptor : public DeviceMemoryResource {
 public:
  explicit ResourceAdaptor(DeviceMemoryResource& upstream) : upstream_(upstream) {}
  [[nodiscard]] std::string_view name() const noexcept override { return upstream_.name(); }
  [[nodiscard]] ResourceUsage usage() const override { return upstream_.usage(); }
  [[nodiscard]] std::optional<std::size_t> reserved_bytes() const override {
    return upstream_.reserved_bytes();
  }
  void trim() override { upstream_.trim(); }
  [[nodiscard]] bool deallocate_synchronizes_device() const noexcept override {
    return upstream_.deallocate_synchronizes_device();
  }
  [[nodiscard]] DeviceMemoryResource& upstream() const noexcept { return upstream_; }

 protected:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override {
    return upstream_.allocate(bytes, stream);
  }
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override {
    upstream_.deallocate(ptr, bytes, stream);
  }
  DeviceMemoryResource& upstream_;
};

class StatisticsAdaptor final : public ResourceAdaptor {
 public:
  explicit StatisticsAdaptor(DeviceMemoryResource& upstream) : ResourceAdaptor(upstream) {}
  [[nodiscard]] ResourceUsage usage() const override;

  [[nodiscard]] AllocationStats stats() const;
  // Host time of allocate / deallocate calls, in ns.
  [[nodiscard]] const Histogram& allocate_latency() const noexcept { return alloc_ns_; }
  [[nodiscard]] const Histogram& deallocate_latency() const noexcept { return free_ns_; }

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  mutable std::mutex mutex_;
  AllocationStats stats_;
  Histogram alloc_ns_, free_ns_;
};

// Fails allocations that would take the bytes in use past `limit` (emulates
// a GPU shared with others). Strategies with a native cap (pool max size,
// vmm and slab budgets) also honour the same budget themselves.
class BudgetAdaptor final : public ResourceAdaptor {
 public:
  BudgetAdaptor(DeviceMemoryResource& upstream, std::size_t limit)
      : ResourceAdaptor(upstream), limit_(limit) {}
  [[nodiscard]] std::size_t in_use() const;
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  std::size_t limit_;
  mutable std::mutex mutex_;
  std::size_t in_use_ = 0;
};

// Holds the upstream to `limit` by what it holds from the device
// (usage().reserved), not by the bytes it hands out: a cudaMemPool_t reserves
// in blocks of its own, past its maxSize (issue #25: pool held 66 MB under a
// 42 MB budget on the H200 while vmm and slab were held to 42). An allocation
// that takes the holdings past the limit is given back, the upstream trimmed
// (after `stream`, so the block just given back can go too) and asked once more;
// still over, it fails as out of memory. One budget rule for every strategy.
class HeldBudgetAdaptor final : public ResourceAdaptor {
 public:
  HeldBudgetAdaptor(DeviceMemoryResource& upstream, std::size_t limit)
      : ResourceAdaptor(upstream), limit_(limit) {}
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  [[nodiscard]] std::int64_t trims() const noexcept { return trims_.load(); }

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  [[nodiscard]] std::size_t held() const { return upstream_.reserved_bytes().value_or(0); }
  std::size_t limit_;
  std::atomic<std::int64_t> trims_{0};
};

// Out of memory (a budget, a full device): trim `trim_target` (the strategy:
// its cached memory goes back), wait a moment for frees still in flight, and
// try again, up to `retries` times (waits of 2, 4, 8… ms). What still fails is
// rethrown and counted as a failure. Allocations hold gate() shared, so
// something that must not race them (a largest-block probe) can hold it
// exclusively.
class RetryAdaptor final : public ResourceAdaptor {
 public:
  RetryAdaptor(DeviceMemoryResource& upstream, DeviceMemoryResource& trim_target, int retries = 2)
      : ResourceAdaptor(upstream), trim_target_(trim_target), retries_allowed_(retries) {}
  [[nodiscard]] std::int64_t retries() const noexcept { return retries_.load(); }
  [[nodiscard]] std::int64_t failures() const noexcept { return failures_.load(); }
  [[nodiscard]] std::shared_mutex& gate() noexcept { return gate_; }

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  DeviceMemoryResource& trim_target_;
  int retries_allowed_;
  std::atomic<std::int64_t> retries_{0}, failures_{0};
  std::shared_mutex gate_;
};

// One line of an allocation log: "t_ns,op,id,bytes,stream".
struct LogEntry {
  std::int64_t t_ns = 0;
  char op = 'a';        // 'a' allocate, 'f' free, 'x' failed allocate
  std::int64_t id = 0;  // pairs a free with its allocate
  std::size_t bytes = 0;
  int stream = 0;  // a small index per distinct stream seen
};

// Writes a CSV allocation log that replay() can run against any strategy.
class LoggingAdaptor final : public ResourceAdaptor {
 public:
  LoggingAdaptor(DeviceMemoryResource& upstream, std::ostream& out);

 private:
  void* do_allocate(std::size_t bytes, cudaStream_t stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept override;
  int stream_index(cudaStream_t s);
  std::ostream& out_;
  std::mutex mutex_;
  std::unordered_map<void*, std::int64_t> ids_;
  std::unordered_map<cudaStream_t, int> streams_;
  std::int64_t next_id_ = 0;
  std::int64_t t0_ns_;
};

// Parses a log written by LoggingAdaptor. Throws logic_error naming the line.
[[nodiscard]] std::vector<LogEntry> parse_allocation_log(std::istream& in);

struct ReplayResult {
  std::int64_t allocations = 0;
  std::int64_t failures = 0;  // allocations the strategy refused (out_of_memory)
  std::int64_t frees = 0;
  std::size_t peak_in_use = 0;
  double seconds = 0;
};

// Runs the log's allocate/free sequence against `mr` (no timing between ops).
// `streams` maps the log's stream indices; missing ones use streams[0] or null.
ReplayResult replay(const std::vector<LogEntry>& log, DeviceMemoryResource& mr,
                    const std::vector<cudaStream_t>& streams = {});

}  // namespace vpipe
