#include "soak/sample_fields.hpp"

#include <type_traits>

namespace vpipe {
namespace {

// A field backed by a member of SoakSample; plot() and gauge() add where it goes.
template <class T>
SampleField field(const char* key, T SoakSample::*member, int csv_decimals = 2) {
  SampleField f{key, SampleField::Kind::kReal, csv_decimals, {}, {}};
  if constexpr (std::is_same_v<T, std::optional<double>>) {
    f.kind = SampleField::Kind::kOptionalReal;
    f.get = [member](const SoakSample& s) { return s.*member; };
    f.set = [member](SoakSample& s, std::optional<double> v) { s.*member = v; };
  } else {
    if constexpr (std::is_integral_v<T>) f.kind = SampleField::Kind::kInt;
    f.get = [member](const SoakSample& s) {
      return std::optional<double>(static_cast<double>(s.*member));
    };
    f.set = [member](SoakSample& s, std::optional<double> v) {
      s.*member = static_cast<T>(v.value_or(0));
    };
  }
  return f;
}

SampleField plot(SampleField f, const char* file, const char* title, const char* unit) {
  f.chart = file;
  f.title = title;
  f.unit = unit;
  return f;
}

SampleField gauge(SampleField f, const char* name, const char* help) {
  f.gauge = name;
  f.help = help;
  return f;
}

}  // namespace

const std::vector<SampleField>& sample_fields() {
  using S = SoakSample;
  static const std::vector<SampleField> fields = {
      field("t_s", &S::t_s, 3),
      gauge(field("frames", &S::frames), "vpipe_soak_frames_total", "Frames done."),
      gauge(plot(field("fps", &S::fps), "fps.png", "Throughput", "fps"), "vpipe_soak_fps",
            "Frames per second over the last interval."),
      gauge(field("p50_ms", &S::p50_ms, 4), "vpipe_soak_latency_p50_ms",
            "Latency p50 over the last interval, source to sink."),
      gauge(plot(field("p99_ms", &S::p99_ms, 4), "latency_p99.png", "Latency p99 (source to sink)",
                 "ms"),
            "vpipe_soak_latency_p99_ms", "Latency p99 over the last interval."),
      gauge(field("max_ms", &S::max_ms, 4), "vpipe_soak_latency_max_ms",
            "Latency max over the last interval."),
      gauge(plot(field("reserved_mb", &S::reserved_mb, 4), "reserved.png",
                 "Device memory reserved by the strategy", "MB"),
            "vpipe_soak_device_reserved_mb", "Device memory held by the strategy."),
      gauge(plot(field("used_mb", &S::used_mb, 4), "used.png", "Device memory in use (handed out)",
                 "MB"),
            "vpipe_soak_device_used_mb", "Device memory handed out."),
      gauge(plot(field("fragmentation", &S::fragmentation, 4), "fragmentation.png",
                 "Fragmentation (1 - largest free / free)", ""),
            "vpipe_soak_fragmentation",
            "1 - largest free block / free bytes, where the strategy sees it."),
      gauge(plot(field("largest_block_mb", &S::largest_block_mb, 4), "largest_block.png",
                 "Largest block the device grants (probed)", "MB"),
            "vpipe_soak_largest_block_mb", "Largest block the device granted at the last probe."),
      gauge(plot(field("probe_ms", &S::probe_ms, 3), "probe.png",
                 "Largest-block probe: time allocations were held back", "ms"),
            "vpipe_soak_probe_ms", "How long the last largest-block probe held allocations back."),
      gauge(field("failures", &S::failures), "vpipe_soak_failures_total",
            "Allocations that failed after retrying."),
      gauge(field("retries", &S::retries), "vpipe_soak_retries_total",
            "Allocations retried after a trim."),
      gauge(plot(field("rss_mb", &S::rss_mb), "rss.png", "Host RSS", "MB"),
            "vpipe_soak_host_rss_mb", "Resident set size of the process."),
      gauge(field("pinned_mb", &S::pinned_mb), "vpipe_soak_pinned_mb",
            "Pinned host memory of the staging ring."),
      field("width", &S::width),
      field("height", &S::height),
  };
  return fields;
}

}  // namespace vpipe
