#include "vpipe/pipeline/io/demux_clock.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace vpipe {

DemuxClock::DemuxClock(std::string path, MediaCounters& counters)
    : path_(std::move(path)), counters_(counters) {}

void DemuxClock::start_at(double origin_s) {
  start_s_ = origin_s;
  offset_s_ = -origin_s;
}

void DemuxClock::cut_at(double start_s, bool shift) {
  start_s_ = start_s;
  if (shift) offset_s_ = -start_s;
}

// The next pass of a --loop follows this one: by the cut's span where there is one, else by
// the pass's extent (a raw stream has no times: the encoder makes them).
void DemuxClock::next_pass(std::optional<double> cut_start, std::optional<double> cut_end) {
  if (cut_start)
    offset_s_ += std::min(cut_end.value_or(pass_end_s_), pass_end_s_) - *cut_start;
  else if (start_s_)
    offset_s_ += pass_end_s_ - *start_s_;
  last_dts_s_.clear();
}

void DemuxClock::reconnected() {
  resync_ = true;
  last_dts_s_.clear();
}

// This pass's extent, and the shift that keeps the output's timestamps
// increasing (loops, reconnects, MPEG-TS discontinuities).
void DemuxClock::retime(AVPacket* pkt, const AVFormatContext& input) {
  const int index = pkt->stream_index;
  const AVRational tb = input.streams[index]->time_base;
  drop_damaged_pts(pkt, input);
  const std::int64_t t = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
  if (t != AV_NOPTS_VALUE) {  // this pass's extent, in source time
    const double begin = static_cast<double>(t) * av_q2d(tb);
    const double end =
        static_cast<double>(t + std::max<std::int64_t>(pkt->duration, 0)) * av_q2d(tb);
    if (resync_) {  // after a reconnect: carry on from the output's last time
      offset_s_ = out_end_s_ - begin;
      resync_ = false;
    }
    if (!start_s_ || (offset_s_ == 0 && begin < *start_s_)) start_s_ = begin;
    pass_end_s_ = std::max(pass_end_s_, end);
    out_end_s_ = std::max(out_end_s_, end + offset_s_);
  }
  // Streams that allow timestamp discontinuities (MPEG-TS: a spliced feed,
  // concatenated files): a jump back, or forward by over 10 s, is closed up
  // so the output's timestamps keep increasing (close_up).
  double own_shift_s = 0;  // this packet's alone
  const std::int64_t d = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
  if ((input.iformat->flags & AVFMT_TS_DISCONT) && d != AV_NOPTS_VALUE) {
    const double step =
        pkt->duration > 0 ? static_cast<double>(pkt->duration) * av_q2d(tb) : 1.0 / 30;
    own_shift_s = close_up(index, static_cast<double>(d) * av_q2d(tb) + offset_s_, step);
  }
  if (offset_s_ != 0) {
    const auto shift = static_cast<std::int64_t>(std::llround(offset_s_ / av_q2d(tb)));
    if (pkt->pts != AV_NOPTS_VALUE) pkt->pts += shift;
    if (pkt->dts != AV_NOPTS_VALUE) pkt->dts += shift;
  }
  if (own_shift_s != 0) {  // a held packet: its decode time was off the line
    const auto shift = static_cast<std::int64_t>(std::llround(own_shift_s / av_q2d(tb)));
    if (pkt->dts == AV_NOPTS_VALUE) {
      pkt->pts += shift;
    } else {
      // Its presentation time moves too, unless it still fits the line (only
      // the DTS was damaged): the first packet after a splice moves whole.
      pkt->dts += shift;
      if (pkt->pts != AV_NOPTS_VALUE && !pts_fits(pkt, input)) pkt->pts += shift;
    }
  }
}

bool DemuxClock::pts_fits(const AVPacket* pkt, const AVFormatContext& input) {
  const AVStream* st = input.streams[pkt->stream_index];
  const AVRational rate = st->r_frame_rate;
  const double reorder_s = std::max(0.5, rate.num > 0 ? 32.0 * rate.den / rate.num : 0.0);
  return pkt->pts >= pkt->dts &&
         static_cast<double>(pkt->pts - pkt->dts) * av_q2d(st->time_base) <= reorder_s;
}

// A presentation time before its decode time, or further after it than a
// decoder reorders (32 frames, 0.5 s at least), is damage (a bit flip in a
// PES header): dropped, so the decoder's guess and the encoder's repair
// (TimestampRepair) take over. (Trusted, one PTS 3 s ahead shifted every
// later frame by 3 s.) Only where a stream carries both times in its packet
// headers (MPEG-TS/PS): elsewhere (MKV) the demuxer guesses the DTS, and a
// variable-rate file's pause (1.3 s between two frames) is no damage.
void DemuxClock::drop_damaged_pts(AVPacket* pkt, const AVFormatContext& input) {
  if (!(input.iformat->flags & AVFMT_TS_DISCONT)) return;
  if (pkt->pts == AV_NOPTS_VALUE || pkt->dts == AV_NOPTS_VALUE || pts_fits(pkt, input)) return;
  pkt->pts = AV_NOPTS_VALUE;
  counters_.timestamps_repaired++;
}

// One damaged time (a bit flip in a PES header) is not a discontinuity: a
// packet off its stream's line is held (it alone takes the last time plus one
// step), and only when the next packet agrees with it is the line moved, for
// every stream alike. A packet that leapt ahead (over two steps, under 10 s),
// then one back in line with the packet before it: the leap was the damage,
// and nothing moves. (Before, a single DTS 3 s ahead shifted the rest of the
// file, video and audio, by 3 s.) Returns this packet's own shift, in seconds.
double DemuxClock::close_up(int index, double out_t, double step) {
  DtsTrack& track = last_dts_s_[index];
  double own = 0;
  const bool off = track.last && (out_t < *track.last || out_t > *track.last + 10.0);
  const bool back_in_line = off && !track.held && track.before && out_t > *track.before &&
                            out_t <= *track.before + 10.0 && *track.last > *track.before + 2 * step;
  if (off && !back_in_line) {
    if (!track.held) {
      own = *track.last + step - out_t;  // held: this packet alone
      track.held = true;
    } else {  // two in a row: the input's time moved
      offset_s_ += *track.last + step - out_t;
      out_t = *track.last + step;
      track.held = false;
      counters_.ts_discontinuities++;
      spdlog::warn("{}: timestamps jump at {:.3f} s (stream #{}); closed up", path_, *track.last,
                   index);
    }
  } else {
    track.held = false;
  }
  track.before = track.last;
  track.last = out_t + own;
  return own;
}

}  // namespace vpipe
