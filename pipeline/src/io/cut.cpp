#include "vpipe/pipeline/io/cut.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/protocols.hpp"

namespace vpipe {

namespace {

double seconds(std::int64_t ts, AVRational tb) { return static_cast<double>(ts) * av_q2d(tb); }

std::optional<double> time_of(const AVPacket* pkt, AVRational tb) {
  const std::int64_t t = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
  if (t == AV_NOPTS_VALUE) return std::nullopt;
  return seconds(t, tb);
}

// The display time of the first keyframe read from here on (nullopt: none
// within a few thousand packets, or the end).
std::optional<double> first_keyframe(AVFormatContext* input, int video) {
  auto pkt = make_av_packet();
  for (int n = 0; n < 5000 && av_read_frame(input, pkt.get()) >= 0; ++n) {
    const bool key = pkt->stream_index == video && (pkt->flags & AV_PKT_FLAG_KEY);
    const auto t = key ? time_of(pkt.get(), input->streams[video]->time_base) : std::nullopt;
    av_packet_unref(pkt.get());
    if (key) return t;
  }
  return std::nullopt;
}

// The time of frame `n` (display order), or nullopt when the input has fewer.
std::optional<double> frame_time(const std::vector<double>& times, std::int64_t n) {
  if (n < 0 || n >= static_cast<std::int64_t>(times.size())) return std::nullopt;
  return times[static_cast<std::size_t>(n)];
}

}  // namespace

std::string Cut::describe() const {
  std::string span = start ? fmt::format("{:.3f} s", *start) : std::string("the start");
  span += end        ? fmt::format(" to {:.3f} s", *end)
          : duration ? fmt::format(" for {:.3f} s", *duration)
                     : std::string(" to the end");
  return fmt::format("cut: {} (input clock), timestamps {}", span,
                     shift ? "from zero" : "kept (copyts)");
}

std::vector<double> display_times(AVFormatContext* input, int video, std::int64_t last) {
  // Past `last`, as many packets again as a decoder may hold back (reordering).
  constexpr std::int64_t kReorderSlack = 64;
  const AVRational tb = input->streams[video]->time_base;
  std::vector<double> times;
  auto pkt = make_av_packet();
  while (static_cast<std::int64_t>(times.size()) <= last + kReorderSlack &&
         av_read_frame(input, pkt.get()) >= 0) {
    if (pkt->stream_index == video) {
      const auto t = time_of(pkt.get(), tb);
      if (!t)
        throw input_error("a video packet without a timestamp: frame numbers cannot be timed");
      times.push_back(*t);
    }
    av_packet_unref(pkt.get());
  }
  std::sort(times.begin(), times.end());
  return times;
}

std::int64_t first_tick_at(double s, AVRational tb) {
  return static_cast<std::int64_t>(std::ceil(s / av_q2d(tb) - 1e-3));
}

double input_origin_s(const AVFormatContext* input) {
  return input->start_time != AV_NOPTS_VALUE ? static_cast<double>(input->start_time) / AV_TIME_BASE
                                             : 0.0;
}

double output_clock_shift_s(const std::optional<Cut>& cut, const AVFormatContext* input,
                            bool copyts) {
  if (copyts) return 0;
  if (cut) return cut->start && cut->shift ? -*cut->start : 0;
  return -input_origin_s(input);
}

Cut resolve_cut(const CutRequest& r, const AVFormatContext* input, int video, bool live,
                const std::function<UniqueDemuxContext()>& open_again) {
  Cut c;
  c.shift = !r.copyts;
  if (live) {  // check_options allows a duration alone
    c.duration = r.duration_s;
    return c;
  }
  const double origin = input_origin_s(input);
  std::vector<double> times;
  if (r.start_frame || r.end_frame) {
    auto scan = open_again();
    const int v = av_find_best_stream(scan.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (v != video) throw input_error("the input's video stream moved when opened again");
    times =
        display_times(scan.get(), v, std::max(r.start_frame.value_or(0), r.end_frame.value_or(0)));
  }
  c.start = origin + r.start_s.value_or(0);
  if (r.start_frame) {
    const auto t = frame_time(times, *r.start_frame);
    if (!t)
      throw input_error(
          fmt::format("ss_frame {}: the input has {} frames", *r.start_frame, times.size()));
    c.start = *t;
  }
  if (r.end_s) c.end = origin + *r.end_s;
  if (r.end_frame) c.end = frame_time(times, *r.end_frame);  // past the last frame: to the end
  if (r.duration_s) c.end = *c.start + *r.duration_s;
  const double length =
      input->duration != AV_NOPTS_VALUE ? static_cast<double>(input->duration) / AV_TIME_BASE : 0;
  if (r.start_s && length > 0 && *r.start_s >= length)
    throw input_error(fmt::format("ss {} s: the input lasts {:.3f} s", *r.start_s, length));
  return c;
}

void seek_before_or_start(UniqueDemuxContext& input, const std::string& path, int video, double t) {
  if (t > input_origin_s(input.get()) && seek_before(input.get(), video, t)) return;
  input = open_input(path);
}

bool seek_before(AVFormatContext* input, int video, double t) {
  const AVRational tb = input->streams[video]->time_base;
  double back = 0;
  for (int attempt = 0; attempt < 8; ++attempt, back = back == 0 ? 1 : 2 * back) {
    const auto ts = static_cast<std::int64_t>(std::floor((t - back) / av_q2d(tb)));
    if (avformat_seek_file(input, video, INT64_MIN, ts, ts, 0) < 0) return false;
    const auto key = first_keyframe(input, video);
    if (!key) continue;
    if (*key <= t + 1e-9) return avformat_seek_file(input, video, INT64_MIN, ts, ts, 0) >= 0;
  }
  return false;
}

}  // namespace vpipe
