#include "vpipe/pipeline/filters/rate_stage.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vpipe {

FpsClock::FpsClock(RateChange change) : change_(change) {
  VPIPE_EXPECTS(change.rate.num > 0 && change.rate.den > 0, "fps: the rate must be positive");
}

// A time in ticks: AV_NOPTS_VALUE stays itself (PASS_MINMAX), below every tick.
std::int64_t FpsClock::tick(std::int64_t pts, AVRational time_base, AVRounding r) const {
  return av_rescale_q_rnd(pts, time_base, av_inv_q(change_.rate),
                          static_cast<AVRounding>(r | AV_ROUND_PASS_MINMAX));
}

Ticks FpsClock::until(std::int64_t t) {
  const Ticks shown{*next_, std::max(*next_, t)};
  next_ = shown.end;
  return shown;
}

Ticks FpsClock::next(std::int64_t pts, AVRational time_base) {
  const std::int64_t t = tick(pts, time_base, change_.rounding);
  if (!next_) {  // the first frame: the output starts at its tick (none: it waits for one)
    if (pts != AV_NOPTS_VALUE) next_ = t;
    return {};
  }
  return until(t);
}

Ticks FpsClock::end(std::int64_t pts, AVRational time_base) {
  if (!next_) return {};
  return until(tick(pts, time_base, change_.end_rounding));
}

RateStage::RateStage(ConfiguredFilter step, std::optional<std::int64_t> most)
    : step_(std::move(step)), clock_(step_.filter->rate_change().value()), most_(most) {}

Flow RateStage::process(Frame in, Output<Frame>& out) {
  if (most_ && stats_.out >= *most_) return Flow::kStop;  // what is still queued is not counted
  stats_.in++;
  if (!held_ && in.pts == AV_NOPTS_VALUE) {  // nothing to start the ticks from: FFmpeg's too
    stats_.dropped++;
    return Flow::kContinue;
  }
  const Ticks t = clock_.next(in.pts, in.time_base);
  const Flow flow = held_ ? show(t, out) : Flow::kContinue;
  held_ = std::move(in);
  return flow;
}

void RateStage::finish(Output<Frame>& out) {
  if (!held_) return;
  if (most_ && stats_.out >= *most_) return;
  // It lasts its packet's duration, as FFmpeg's end of input says: none known (a VFR MP4's last
  // sample), it ends at its own time, as FFmpeg's does.
  const std::int64_t lasts = held_->duration;
  const std::int64_t end = held_->pts == AV_NOPTS_VALUE ? AV_NOPTS_VALUE : held_->pts + lasts;
  (void)show(clock_.end(end, held_->time_base), out);
  held_.reset();
  if (stats_.out == 0)  // an empty file would follow: say why instead
    throw input_error(fmt::format(
        "{}: no frame falls on a tick of {}/{} fps: the {} frames read end before the first "
        "tick is due (eof_action=pass keeps the last frame)",
        step_.label, clock_.rate().num, clock_.rate().den, stats_.in));
}

// The held frame, once per tick of `t` (none: it is dropped), each copy at its own time.
Flow RateStage::show(const Ticks& t, Output<Frame>& out) {
  if (t.count() == 0) {
    stats_.dropped++;
    return Flow::kContinue;
  }
  stats_.repeated += t.count() - 1;
  for (std::int64_t k = t.first; k < t.end; ++k) {
    if (most_ && stats_.out >= *most_) return Flow::kStop;
    Frame copy = *held_;
    copy.pts = k;
    copy.duration = 1;  // one tick: a later fps= reads the end from it
    copy.time_base = av_inv_q(clock_.rate());
    if (!out.emit(std::move(copy))) return Flow::kStop;
    stats_.out++;
  }
  return most_ && stats_.out >= *most_ ? Flow::kStop : Flow::kContinue;
}

}  // namespace vpipe
