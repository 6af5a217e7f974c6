#include "vpipe/pipeline/io/cut_gate.hpp"

#include <algorithm>
#include <cmath>

namespace vpipe {

FrameWindow CutGate::window(AVRational video_tb, double offset_s) const {
  // The packets' shift, as the clock's retime applies it: the window moves with them tick
  // for tick.
  const auto shift = static_cast<std::int64_t>(std::llround(offset_s / av_q2d(video_tb)));
  FrameWindow w;
  if (cut_.start) w.from = first_tick_at(*cut_.start, video_tb) + shift;
  if (cut_.end) w.until = first_tick_at(*cut_.end, video_tb) + shift;
  return w;
}

CutGate::Verdict CutGate::judge(AVPacket* pkt, const AVFormatContext& input, int index, int video,
                                DemuxClock& clock) {
  const AVStream& s = *input.streams[index];
  const auto at = [&](std::int64_t ts) { return static_cast<double>(ts) * av_q2d(s.time_base); };
  const std::int64_t any = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
  if (!cut_.start) {  // a live input: the span starts with the first timed packet
    if (any == AV_NOPTS_VALUE) return Verdict::kKeep;
    cut_.start = at(any);
    clock.cut_at(*cut_.start, cut_.shift);
    if (cut_.duration) cut_.end = *cut_.start + *cut_.duration;
  }
  if (index == video) return judge_video(*pkt, s);
  if (any == AV_NOPTS_VALUE) return video_past_end_ ? Verdict::kDrop : Verdict::kKeep;
  const double t = at(any);
  if (video_past_end_ && t >= *cut_.end + 1.0) return Verdict::kPassOver;
  if (s.codecpar->codec_type == AVMEDIA_TYPE_SUBTITLE && pkt->pts != AV_NOPTS_VALUE &&
      pkt->duration > 0)
    return clip_cue(pkt, s.time_base) ? Verdict::kKeep : Verdict::kDrop;
  if (t < *cut_.start || (cut_.end && t >= *cut_.end)) return Verdict::kDrop;
  return Verdict::kKeep;
}

CutGate::Verdict CutGate::judge_video(const AVPacket& pkt, const AVStream& s) {
  if (to_keyframe_ && !(pkt.flags & AV_PKT_FLAG_KEY)) return Verdict::kDrop;
  to_keyframe_ = false;
  // Past the end once decoded at or after it. Without a decode time (Matroska's first packets
  // after a seek) a reordering stream's shown time runs ahead (a P-frame shown after the
  // B-frames decoded next): only a stream without reordering is judged by it.
  const bool reorders = s.codecpar->video_delay > 0;
  const std::int64_t d =
      pkt.dts != AV_NOPTS_VALUE ? pkt.dts : (reorders ? AV_NOPTS_VALUE : pkt.pts);
  if (cut_.end && d != AV_NOPTS_VALUE && static_cast<double>(d) * av_q2d(s.time_base) >= *cut_.end)
    video_past_end_ = true;
  return video_past_end_ ? Verdict::kVideoPastEnd : Verdict::kKeep;
}

// A subtitle cue with a length is kept while it shows inside the span: a line already on
// screen at the start shows from the start, one still on screen at the end stops there.
bool CutGate::clip_cue(AVPacket* pkt, AVRational tb) const {
  const std::int64_t from = first_tick_at(*cut_.start, tb);
  std::int64_t until = pkt->pts + pkt->duration;
  if (cut_.end) until = std::min(until, first_tick_at(*cut_.end, tb));
  const std::int64_t begins = std::max(pkt->pts, from);
  if (begins >= until) return false;
  if (pkt->dts == pkt->pts || pkt->dts == AV_NOPTS_VALUE) pkt->dts = begins;
  pkt->pts = begins;
  pkt->duration = until - begins;
  return true;
}

}  // namespace vpipe
