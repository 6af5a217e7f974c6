// A frame-rate change (--vf fps=N) as a pipeline stage: which frames are kept, dropped or shown
// more than once, and at which times, as FFmpeg's fps filter decides it (libavfilter/vf_fps.c).
// Pixels are never touched: a repeated frame is the same frame again (the same planes, host or
// device), so the stage sits wherever the chain puts it, on either side of an upload.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

extern "C" {
#include <libavutil/mathematics.h>
}

#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

// The ticks of the output rate (tick k is at k / rate seconds) at which one input frame is shown:
// [first, end), empty when the frame is dropped.
struct Ticks {
  std::int64_t first = 0;
  std::int64_t end = 0;
  [[nodiscard]] std::int64_t count() const { return end > first ? end - first : 0; }
};

// FFmpeg's fps rule, one frame at a time. Each input time is rounded to the nearest tick (or as
// `rounding` says); the output starts at the first frame's tick, and every tick shows the last
// frame whose rounded time is at or before it; the input's end (its last frame's time plus its
// duration) is the first tick not shown, unless the last frame's own tick is later (FFmpeg reads
// the end only once one frame is left). So a frame is known shown or dropped only when the next
// one (or the end) comes: next() answers for the frame before.
class FpsClock {
 public:
  // The end's rounding: eof_action round, the times'; pass, up (the last frame is kept).
  explicit FpsClock(RateChange change);
  // The next input frame, at `pts` in `time_base`: the ticks of the frame before it (none
  // before the first frame).
  Ticks next(std::int64_t pts, AVRational time_base);
  // The input's end, at `pts` in `time_base`: the ticks of the last frame.
  Ticks end(std::int64_t pts, AVRational time_base);
  [[nodiscard]] AVRational rate() const noexcept { return change_.rate; }

 private:
  [[nodiscard]] std::int64_t tick(std::int64_t pts, AVRational time_base, AVRounding r) const;
  Ticks until(std::int64_t tick);
  RateChange change_;
  std::optional<std::int64_t> next_;  // the next tick to show (none before the first frame)
};

// What a rate stage did: FFmpeg's fps filter logs the same four counts.
struct RateStats {
  std::int64_t in = 0, out = 0, dropped = 0, repeated = 0;
};

// Runs a rate-changing step of the chain (Filter::rate_change). Each frame is held until the next
// one says how many ticks it gets; then it goes on that many times, each copy at its tick, in the
// output rate's time base (1/rate: a tick is 1), lasting one tick. At the end the last frame's
// ticks run to its time plus its duration (its packet's; none known: its own time), as FFmpeg's.
// `most`: at most that many frames go on (--frames N counts output frames, as FFmpeg's -frames:v
// does).
class RateStage final : public Stage<Frame, Frame> {
 public:
  RateStage(ConfiguredFilter step, std::optional<std::int64_t> most);
  [[nodiscard]] std::string name() const override { return "rate:" + step_.label; }
  Flow process(Frame in, Output<Frame>& out) override;
  void finish(Output<Frame>& out) override;
  // Read after the run (the stage's thread has ended).
  [[nodiscard]] const RateStats& stats() const noexcept { return stats_; }

 private:
  Flow show(const Ticks& t, Output<Frame>& out);
  ConfiguredFilter step_;
  FpsClock clock_;
  std::optional<std::int64_t> most_;
  std::optional<Frame> held_;
  RateStats stats_;
};

}  // namespace vpipe
