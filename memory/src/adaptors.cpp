#include "vpipe/memory/adaptors.hpp"

#include <fmt/format.h>

#include <chrono>
#include <istream>
#include <ostream>
#include <sstream>
#include <thread>

#include "vpipe/base/errors.hpp"

namespace vpipe {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

// ---- statistics -------------------------------------------------------------

void* StatisticsAdaptor::do_allocate(std::size_t bytes, cudaStream_t stream) {
  const auto t0 = now_ns();
  void* p = nullptr;
  try {
    p = upstream_.allocate(bytes, stream);
  } catch (const out_of_memory&) {
    std::lock_guard lock(mutex_);
    ++stats_.failures;
    throw;
  }
  alloc_ns_.record(static_cast<std::uint64_t>(now_ns() - t0));
  std::lock_guard lock(mutex_);
  stats_.bytes.add(static_cast<std::int64_t>(bytes));
  stats_.count.add(1);
  return p;
}

void StatisticsAdaptor::do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept {
  const auto t0 = now_ns();
  upstream_.deallocate(ptr, bytes, stream);
  free_ns_.record(static_cast<std::uint64_t>(now_ns() - t0));
  std::lock_guard lock(mutex_);
  stats_.bytes.add(-static_cast<std::int64_t>(bytes));
  stats_.count.add(-1);
  if (upstream_.deallocate_synchronizes_device()) ++stats_.device_syncs;
}

AllocationStats StatisticsAdaptor::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

ResourceUsage StatisticsAdaptor::usage() const {
  ResourceUsage u = upstream_.usage();
  if (!u.used) {
    std::lock_guard lock(mutex_);
    u.used = static_cast<std::size_t>(stats_.bytes.value);
  }
  return u;
}

// ---- budget -----------------------------------------------------------------

void* RetryAdaptor::do_allocate(std::size_t bytes, cudaStream_t stream) {
  std::shared_lock lock(gate_);
  for (int attempt = 0;; ++attempt) {
    try {
      return upstream_.allocate(bytes, stream);
    } catch (const out_of_memory&) {
      if (attempt >= retries_allowed_) {
        failures_++;
        throw;
      }
      retries_++;
      trim_target_.trim();
      std::this_thread::sleep_for(std::chrono::milliseconds(2 << attempt));
    }
  }
}

void* HeldBudgetAdaptor::do_allocate(std::size_t bytes, cudaStream_t stream) {
  void* p = upstream_.allocate(bytes, stream);
  if (held() <= limit_) return p;
  const auto give_back = [&] {
    upstream_.deallocate(p, bytes, stream);
    // A stream-ordered free is released by a trim only once the host has seen
    // it complete. Without a GPU (the CPU tests' fakes) this fails harmlessly.
    (void)cudaStreamSynchronize(stream);
    upstream_.trim();
    ++trims_;
  };
  give_back();
  p = upstream_.allocate(bytes, stream);
  if (const std::size_t h = held(); h > limit_) {
    give_back();  // what it reserved for this call goes back too
    throw out_of_memory(
        fmt::format("{}: {} more bytes would hold {} bytes of the device, over the "
                    "budget of {}",
                    upstream_.name(), bytes, h, limit_));
  }
  return p;
}

void* BudgetAdaptor::do_allocate(std::size_t bytes, cudaStream_t stream) {
  {
    std::lock_guard lock(mutex_);
    if (in_use_ + bytes > limit_)
      throw out_of_memory(
          fmt::format("budget: {} more bytes would exceed {} ({} in use)", bytes, limit_, in_use_));
    in_use_ += bytes;  // reserve before the call, so concurrent callers see it
  }
  try {
    return upstream_.allocate(bytes, stream);
  } catch (...) {
    std::lock_guard lock(mutex_);
    in_use_ -= bytes;
    throw;
  }
}

void BudgetAdaptor::do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept {
  upstream_.deallocate(ptr, bytes, stream);
  std::lock_guard lock(mutex_);
  in_use_ -= bytes;
}

std::size_t BudgetAdaptor::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

// ---- logging ----------------------------------------------------------------

LoggingAdaptor::LoggingAdaptor(DeviceMemoryResource& upstream, std::ostream& out)
    : ResourceAdaptor(upstream), out_(out), t0_ns_(now_ns()) {
  out_ << "t_ns,op,id,bytes,stream\n";
}

int LoggingAdaptor::stream_index(cudaStream_t s) {
  auto [it, _] = streams_.emplace(s, static_cast<int>(streams_.size()));
  return it->second;
}

void* LoggingAdaptor::do_allocate(std::size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  try {
    p = upstream_.allocate(bytes, stream);
  } catch (const out_of_memory&) {
    std::lock_guard lock(mutex_);
    out_ << now_ns() - t0_ns_ << ",x," << next_id_++ << ',' << bytes << ',' << stream_index(stream)
         << '\n';
    throw;
  }
  std::lock_guard lock(mutex_);
  const auto id = next_id_++;
  ids_[p] = id;
  out_ << now_ns() - t0_ns_ << ",a," << id << ',' << bytes << ',' << stream_index(stream) << '\n';
  return p;
}

void LoggingAdaptor::do_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) noexcept {
  upstream_.deallocate(ptr, bytes, stream);
  std::lock_guard lock(mutex_);
  auto it = ids_.find(ptr);
  const std::int64_t id = it == ids_.end() ? -1 : it->second;
  if (it != ids_.end()) ids_.erase(it);
  out_ << now_ns() - t0_ns_ << ",f," << id << ',' << bytes << ',' << stream_index(stream) << '\n';
}

std::vector<LogEntry> parse_allocation_log(std::istream& in) {
  std::vector<LogEntry> log;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line.rfind("t_ns", 0) == 0) continue;
    std::istringstream ss(line);
    LogEntry e;
    char c1 = 0, c2 = 0, c3 = 0, c4 = 0;
    if (!(ss >> e.t_ns >> c1 >> e.op >> c2 >> e.id >> c3 >> e.bytes >> c4 >> e.stream) ||
        c1 != ',' || c2 != ',' || c3 != ',' || c4 != ',' ||
        (e.op != 'a' && e.op != 'f' && e.op != 'x'))
      throw logic_error(fmt::format("allocation log line {}: cannot parse '{}'", n, line));
    log.push_back(e);
  }
  return log;
}

ReplayResult replay(const std::vector<LogEntry>& log, DeviceMemoryResource& mr,
                    const std::vector<cudaStream_t>& streams) {
  ReplayResult r;
  std::unordered_map<std::int64_t, std::pair<void*, std::size_t>> live;
  std::size_t in_use = 0;
  auto stream_of = [&](int i) -> cudaStream_t {
    if (i >= 0 && static_cast<std::size_t>(i) < streams.size())
      return streams[static_cast<std::size_t>(i)];
    return streams.empty() ? nullptr : streams[0];
  };
  const auto t0 = now_ns();
  for (const auto& e : log) {
    if (e.op == 'a' || e.op == 'x') {
      ++r.allocations;
      try {
        live[e.id] = {mr.allocate(e.bytes, stream_of(e.stream)), e.bytes};
        in_use += e.bytes;
        r.peak_in_use = std::max(r.peak_in_use, in_use);
      } catch (const out_of_memory&) {
        ++r.failures;
      }
    } else if (auto it = live.find(e.id); it != live.end()) {
      mr.deallocate(it->second.first, it->second.second, stream_of(e.stream));
      in_use -= it->second.second;
      live.erase(it);
      ++r.frees;
    }
  }
  for (auto& [id, p] : live) mr.deallocate(p.first, p.second, stream_of(0));
  r.seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  return r;
}

}  // namespace vpipe
