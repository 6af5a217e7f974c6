#include "vpipe/pipeline/io/media_counters.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "vpipe/pipeline/filters/stamp.hpp"

namespace vpipe {

void record_stamp(const Frame& frame, MediaCounters& counters) {
  if (frame.memory != MemoryKind::kHost || frame.num_planes < 1) return;
  if (const auto stamp = read_stamp(frame.planes[0])) {
    const auto age = static_cast<std::uint64_t>(
        std::max<std::int64_t>(0, stamp_age_ns(*stamp, stamp_clock_us())));
    counters.glass_ns.record(age);
    const std::int64_t now = Clock::now().time_since_epoch().count();
    std::int64_t first = 0;
    counters.first_stamp_ns.compare_exchange_strong(first, now);
    if (first != 0 && std::chrono::nanoseconds(now - first) >= std::chrono::seconds(2))
      counters.glass_steady_ns.record(age);
    counters.stamps_read++;
  } else {
    counters.stamps_missing++;
  }
}

void MediaCounters::count_written(Clock::time_point origin) {
  const auto now = Clock::now();
  latency_ns.record(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - origin).count()));
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  if (++video_packets_written == kWarmUpFrames) warm_ns = ns;
  last_written_ns = ns;
}

double MediaCounters::steady_fps() const {
  const std::int64_t n = video_packets_written - kWarmUpFrames;
  const double s = static_cast<double>(last_written_ns - warm_ns) * 1e-9;
  return n > 0 && s > 0 ? static_cast<double>(n) / s : 0.0;
}

void count_encoded(const AVPacket& pkt, const AVCodecContext& encoder, MediaCounters& counters) {
  counters.frames_encoded++;
  if (pkt.size == 0 && counters.encoder_dropped++ == 0)
    spdlog::warn(
        "encode: {} dropped a frame to keep its bit rate (a packet of no bytes: players repeat "
        "the frame before; counted): a higher bitrate keeps every frame",
        encoder.codec ? encoder.codec->name : "the encoder");
}

}  // namespace vpipe
