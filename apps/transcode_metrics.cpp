#include "transcode_metrics.hpp"

#include <unistd.h>

#include <fstream>
#include <functional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "vpipe/pipeline/session/transcode_report.hpp"

namespace vpipe {

namespace {

struct Series {
  const char* name;
  const char* type;  // counter or gauge
  const char* help;
  std::function<double(const LiveStats&)> get;
};

// Label values escaped as the exposition format asks (\, " and newline).
std::string escape(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::vector<Series> computed_series();

std::string stream_labels(const LiveStats& s) {
  return fmt::format("stream=\"{}\",input=\"{}\",output=\"{}\"", escape(s.stream), escape(s.input),
                     escape(s.output));
}

// The run's counters come from the report's one field table (count_fields); the
// series computed here are the drops (all queues) and the rates.
const std::vector<Series>& per_stream() {
  static const std::vector<Series> table = [] {
    std::vector<Series> t;
    for (const auto& f : count_fields())
      if (f.live)
        t.push_back({f.metric.data(), "counter", f.help.data(),
                     [m = f.live](const LiveStats& s) { return double(s.*m); }});
    t.push_back({"vpipe_frames_dropped_total", "counter",
                 "Frames a drop policy threw away, all queues.",
                 [](const LiveStats& s) { return double(s.frames_dropped); }});
    for (auto& s : computed_series()) t.push_back(std::move(s));
    return t;
  }();
  return table;
}

std::vector<Series> computed_series() {
  return {
      {"vpipe_fps", "gauge", "Frames written per second since the run started.",
       [](const LiveStats& s) {
         return s.elapsed_s > 0 ? double(s.frames_written) / s.elapsed_s : 0.0;
       }},
      {"vpipe_run_seconds", "gauge", "Seconds since the run started.",
       [](const LiveStats& s) { return s.elapsed_s; }},
  };
}

const std::vector<Series>& per_strategy() {
  static const std::vector<Series> table = {
      {"vpipe_device_memory_in_use_bytes", "gauge", "Device memory handed out by the strategy.",
       [](const LiveStats& s) { return double(s.memory_in_use); }},
      {"vpipe_device_memory_peak_bytes", "gauge", "Most device memory handed out at once.",
       [](const LiveStats& s) { return double(s.memory_peak); }},
      {"vpipe_device_memory_reserved_bytes", "gauge",
       "Device memory the strategy holds (in use or cached).",
       [](const LiveStats& s) { return double(s.memory_reserved); }},
      {"vpipe_allocation_failures_total", "counter", "Allocations the device refused.",
       [](const LiveStats& s) { return double(s.allocation_failures); }},
      {"vpipe_allocation_retries_total", "counter", "Allocations retried after a trim.",
       [](const LiveStats& s) { return double(s.allocation_retries); }},
  };
  return table;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::int64_t process_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return static_cast<std::int64_t>(pages_rss) * sysconf(_SC_PAGESIZE);
}

std::string transcode_metrics_text(const std::vector<LiveStats>& runs) {
  std::string out;
  for (const auto& series : per_stream()) {
    header(out, series.name, series.type, series.help);
    for (const auto& s : runs)
      out += fmt::format("{}{{{}}} {}\n", series.name, stream_labels(s), series.get(s));
  }
  // One group per family (the exposition format asks for it), streams inside.
  header(out, "vpipe_latency_seconds", "gauge",
         "Demux to output latency per frame, quantiles since the start.");
  for (const auto& s : runs)
    for (const auto& [q, v] :
         {std::pair{"0.5", s.latency_ms_p50}, {"0.99", s.latency_ms_p99}, {"1", s.latency_ms_max}})
      out += fmt::format("vpipe_latency_seconds{{{},quantile=\"{}\"}} {}\n", stream_labels(s), q,
                         v / 1e3);
  header(out, "vpipe_glass_to_glass_seconds", "gauge",
         "Sender's stamp to the encoder (--read-stamps), quantiles.");
  for (const auto& s : runs)
    if (s.glass_frames > 0)
      for (const auto& [q, v] : {std::pair{"0.5", s.glass_ms_p50}, {"0.99", s.glass_ms_p99}})
        out += fmt::format("vpipe_glass_to_glass_seconds{{{},quantile=\"{}\"}} {}\n",
                           stream_labels(s), q, v / 1e3);
  for (const auto& [name, help, capacity] :
       {std::tuple{"vpipe_queue_depth", "Frames or packets waiting in a queue between two stages.",
                   false},
        {"vpipe_queue_capacity", "The queue's bound.", true}}) {
    header(out, name, "gauge", help);
    for (const auto& s : runs)
      for (const auto& q : s.queues)
        out += fmt::format("{}{{{},queue=\"{}\"}} {}\n", name, stream_labels(s), escape(q.name),
                           capacity ? q.capacity : q.depth);
  }
  // Streams of one process share one strategy: its series once.
  std::vector<const LiveStats*> strategies;
  std::set<std::string> seen;
  for (const auto& s : runs)
    if (!s.strategy.empty() && seen.insert(s.strategy).second) strategies.push_back(&s);
  for (const auto& series : per_strategy()) {
    header(out, series.name, series.type, series.help);
    for (const auto* s : strategies)
      out += fmt::format("{}{{strategy=\"{}\"}} {}\n", series.name, escape(s->strategy),
                         series.get(*s));
  }
  header(out, "vpipe_process_resident_memory_bytes", "gauge", "Resident set size of the process.");
  out += fmt::format("vpipe_process_resident_memory_bytes {}\n", process_rss_bytes());
  header(out, "vpipe_pinned_host_bytes", "gauge", "Pinned host memory for staging, all streams.");
  std::int64_t pinned = 0;
  for (const auto& s : runs) pinned += s.pinned_bytes;
  out += fmt::format("vpipe_pinned_host_bytes {}\n", pinned);
  return out;
}

}  // namespace vpipe
