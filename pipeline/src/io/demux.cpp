#include "vpipe/pipeline/io/demux.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>

#include "vpipe/base/errors.hpp"

namespace vpipe {

// ---- demux -----------------------------------------------------------------

DemuxSource::DemuxSource(AVFormatContext* input, std::string path, int video_stream,
                         MediaCounters& counters, bool realtime)
    : input_(input),
      path_(std::move(path)),
      video_stream_(video_stream),
      counters_(counters),
      copies_(path_, counters),
      clock_(path_, counters),
      realtime_(realtime) {}

// Back to the start for the next pass: a byte stream (MPEG-TS/PS, a raw
// Annex-B stream) by byte, exactly (a PS timestamp seek lands near the start;
// a raw stream has no timestamps); an indexed container (MP4, MKV) by time,
// exactly; where the seek fails, the input is opened afresh.
bool DemuxSource::seek_to_start() {
  const bool byte_stream =
      (input_->iformat->flags & AVFMT_TS_DISCONT) || input_->iformat->raw_codec_id != 0;
  if (byte_stream && !(input_->iformat->flags & AVFMT_NO_BYTE_SEEK))
    return av_seek_frame(input_, -1, 0, AVSEEK_FLAG_BYTE) >= 0;
  const std::int64_t start = input_->start_time != AV_NOPTS_VALUE ? input_->start_time : 0;
  return av_seek_frame(input_, -1, start, AVSEEK_FLAG_BACKWARD) >= 0;
}

bool DemuxSource::rewind() {
  if (loops_left_ <= 0) return false;
  if (!(cut_ && cut_->start ? seek_to_cut() : seek_to_start())) {
    if (!reopen_loop_) {
      spdlog::warn("{}: cannot seek back to loop", path_);
      return false;
    }
    try {
      UniqueDemuxContext next = reopen_loop_();
      if (next->nb_streams != input_->nb_streams) throw input_error("the streams changed");
      input_ = next.get();
      looped_ = std::move(next);  // the pass before is done with: its packets hold their own data
      if (cut_ && cut_->start) (void)seek_to_cut();
    } catch (const std::exception& e) {
      spdlog::warn("{}: cannot open again to loop: {}", path_, e.what());
      return false;
    }
  }
  loops_left_--;
  drain_pending_ = true;
  clock_.next_pass(cut_ ? cut_->start : std::nullopt, cut_ ? cut_->end : std::nullopt);
  video_past_end_ = false;
  return true;
}

// ---- a cut ---------------------------------------------------------------------

void DemuxSource::cut(const Cut& c) {
  cut_ = c;
  if (!c.start) return;  // a live input: the first packet read starts it (apply_cut)
  clock_.cut_at(*c.start, c.shift);
  (void)seek_to_cut();
}

bool DemuxSource::seek_to_cut() {
  if (*cut_->start > input_origin_s(input_) && seek_before(input_, video_stream_, *cut_->start)) {
    to_keyframe_ = true;  // an MPEG-TS seek can land inside a GOP
    return true;
  }
  return seek_to_start();  // decoded from the start: exact, only slower
}

bool DemuxSource::copies_streams() const {
  for (unsigned i = 0; i < input_->nb_streams; ++i)
    if (static_cast<int>(i) != video_stream_ && copies_.copied(static_cast<int>(i))) return true;
  return false;
}

FrameWindow DemuxSource::window() const {
  const double q = av_q2d(input_->streams[video_stream_]->time_base);
  // The packets' shift, as retime() applies it: the window moves with them tick for tick.
  const auto shift = static_cast<std::int64_t>(std::llround(clock_.offset_s() / q));
  const auto tick = [&](double s) {
    return static_cast<std::int64_t>(std::ceil(s / q - 1e-3)) + shift;
  };
  FrameWindow w;
  if (cut_->start) w.from = tick(*cut_->start);
  if (cut_->end) w.until = tick(*cut_->end);
  return w;
}

// Before retime(), in the input's own clock: which packets the cut keeps.
// Video: every packet from the keyframe before the start (the decoder needs
// them; the frames before the start are dropped after it) until one decoded at
// or after the end. Copied streams: the packets that start inside the span,
// read on for a second past the video's end (the muxer interleaved them later).
DemuxSource::CutVerdict DemuxSource::apply_cut(AVPacket* pkt, int index) {
  const AVRational tb = input_->streams[index]->time_base;
  const auto at = [&](std::int64_t ts) { return static_cast<double>(ts) * av_q2d(tb); };
  const std::int64_t any = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
  if (!cut_->start) {  // a live input: the span starts with the first timed packet
    if (any == AV_NOPTS_VALUE) return CutVerdict::kKeep;
    cut_->start = at(any);
    clock_.cut_at(*cut_->start, cut_->shift);
    if (cut_->duration) cut_->end = *cut_->start + *cut_->duration;
  }
  if (index == video_stream_) {
    if (to_keyframe_ && !(pkt->flags & AV_PKT_FLAG_KEY)) return CutVerdict::kDrop;
    to_keyframe_ = false;
    // Past the end once decoded at or after it. Without a decode time (Matroska's first
    // packets after a seek) a reordering stream's shown time runs ahead (a P-frame shown after
    // the B-frames decoded next): only a stream without reordering is judged by it.
    const bool reorders = input_->streams[index]->codecpar->video_delay > 0;
    const std::int64_t d =
        pkt->dts != AV_NOPTS_VALUE ? pkt->dts : (reorders ? AV_NOPTS_VALUE : pkt->pts);
    if (cut_->end && d != AV_NOPTS_VALUE && at(d) >= *cut_->end) video_past_end_ = true;
    if (!video_past_end_) return CutVerdict::kKeep;
    return copies_streams() ? CutVerdict::kDrop : CutVerdict::kPassOver;
  }
  if (any == AV_NOPTS_VALUE) return video_past_end_ ? CutVerdict::kDrop : CutVerdict::kKeep;
  const double t = at(any);
  if (video_past_end_ && t >= *cut_->end + 1.0) return CutVerdict::kPassOver;
  if (input_->streams[index]->codecpar->codec_type == AVMEDIA_TYPE_SUBTITLE &&
      pkt->pts != AV_NOPTS_VALUE && pkt->duration > 0)
    return clip_cue(pkt, tb) ? CutVerdict::kKeep : CutVerdict::kDrop;
  if (t < *cut_->start || (cut_->end && t >= *cut_->end)) return CutVerdict::kDrop;
  return CutVerdict::kKeep;
}

// A subtitle cue with a length is kept while it shows inside the span: a line
// already on screen at the start shows from the start, one still on screen at
// the end stops there.
bool DemuxSource::clip_cue(AVPacket* pkt, AVRational tb) const {
  const double q = av_q2d(tb);
  const auto from = static_cast<std::int64_t>(std::ceil(*cut_->start / q - 1e-3));
  const std::int64_t ends = pkt->pts + pkt->duration;
  std::int64_t until = ends;
  if (cut_->end)
    until = std::min(until, static_cast<std::int64_t>(std::ceil(*cut_->end / q - 1e-3)));
  const std::int64_t begins = std::max(pkt->pts, from);
  if (begins >= until) return false;
  if (pkt->dts == pkt->pts || pkt->dts == AV_NOPTS_VALUE) pkt->dts = begins;
  pkt->pts = begins;
  pkt->duration = until - begins;
  return true;
}

bool DemuxSource::reopen(const std::string& why) {
  if (reconnects_left_ <= 0 || !reopen_) return false;
  if (watch_ && watch_->interrupted()) return false;
  for (int attempt = 0; reconnects_left_-- > 0; ++attempt) {
    // A short pause before each attempt but the first: a server restarting
    // needs a moment (interruptible by Ctrl-C).
    for (int i = 0; i < 10 * std::min(attempt, 5) && !(watch_ && watch_->interrupted()); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    spdlog::warn("{}: {}; reconnecting ({} attempt(s) left after this one)", path_, why,
                 reconnects_left_);
    try {
      auto next = reopen_();
      const int v = av_find_best_stream(next.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
      const AVCodecParameters* was = input_->streams[video_stream_]->codecpar;
      if (v < 0 || next->streams[v]->codecpar->codec_id != was->codec_id) {
        spdlog::warn("{}: the reconnected input has another video stream; stopping", path_);
        return false;
      }
      // Other streams keep their mapping only where the layout is the same.
      copies_.remap(next->nb_streams == input_->nb_streams && v == video_stream_, next->nb_streams);
      video_stream_ = v;
      input_ = next.get();
      reopened_.push_back(std::move(next));
      clock_.reconnected();
      counters_.reconnects++;
      return true;
    } catch (const std::exception& e) {
      spdlog::warn("{}: reconnect failed: {}", path_, e.what());
      if (watch_ && watch_->interrupted()) return false;
    }
  }
  return false;
}

// The next packet into `pkt` (rewinding for a loop, reopening a live input
// that went away); nullopt when one was read, else how the input ends.
std::optional<Flow> DemuxSource::read(AVPacket* pkt) {
  if (!first_.empty()) {
    av_packet_move_ref(pkt, first_.front().get());
    first_.pop_front();
    return std::nullopt;
  }
  int ret = 0;
  for (;;) {
    if (watch_) watch_->arm();
    ret = av_read_frame(input_, pkt);
    if (watch_) watch_->disarm();
    const bool interrupted = interrupt_ && interrupt_->load() != 0;
    if (ret >= 0 && interrupted && (pkt->flags & AV_PKT_FLAG_CORRUPT)) {
      av_packet_unref(pkt);  // cut short by Ctrl-C, not damaged
      return Flow::kStop;
    }
    if (ret == AVERROR_EOF && !interrupted && rewind()) continue;
    if (ret >= 0) return std::nullopt;
    if (watch_ && watch_->interrupted()) return Flow::kStop;  // Ctrl-C during a blocking read
    const bool stalled = watch_ && watch_->stalled();
    if (ret == AVERROR_EXIT && !stalled) return Flow::kStop;  // a file's interrupt callback: Ctrl-C
    if (stalled) counters_.stalls++;
    const std::string why = stalled ? fmt::format("no data for {} s", watch_->timeout_s())
                            : ret == AVERROR_EOF ? std::string("the input ended")
                                                 : av_error_text(ret);
    if (watch_ && reopen(why)) continue;
    if (stalled) {
      spdlog::warn("{}: input stalled: {}; finishing the output", path_, why);
      return Flow::kStop;
    }
    if (ret == AVERROR_EOF) return Flow::kStop;
    if (watch_) {  // a live input whose sender went away (SRT, TCP: I/O error): its end, not damage
      spdlog::warn("{}: the input ended: {}; finishing the output", path_, why);
      counters_.disconnects++;
      return Flow::kStop;
    }
    // Damage at the end of a file: keep what was read, say what happened.
    spdlog::warn("{}: reading stopped early: {}", path_, why);
    counters_.decode_errors++;
    return Flow::kStop;
  }
}

// --realtime: release the packet no sooner than its timestamp says.
void DemuxSource::pace(std::int64_t ts, int index) {
  const double t = static_cast<double>(ts) * av_q2d(input_->streams[index]->time_base);
  if (!first_ts_) {
    first_ts_ = t;
    start_ = Clock::now();
  }
  std::this_thread::sleep_until(start_ + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(t - *first_ts_)));
}

Flow DemuxSource::produce(Output<Packet>& out) {
  Packet p{make_av_packet(), {}};
  if (const auto end = read(p.pkt.get())) return *end;
  if (std::exchange(drain_pending_, false) &&
      !out.emit(Packet{make_av_packet(), Clock::now(), true}))
    return Flow::kStop;
  const int index = p.pkt->stream_index;
  const bool known = index >= 0 && index < static_cast<int>(input_->nb_streams);
  if (known && cut_) {
    switch (apply_cut(p.pkt.get(), index)) {
      case CutVerdict::kDrop:
        return Flow::kContinue;
      case CutVerdict::kPassOver:
        return rewind() ? Flow::kContinue : Flow::kStop;
      case CutVerdict::kKeep:
        break;
    }
  }
  if (known) clock_.retime(p.pkt.get(), *input_);
  const std::int64_t ts = p.pkt->dts != AV_NOPTS_VALUE ? p.pkt->dts : p.pkt->pts;
  if (realtime_ && ts != AV_NOPTS_VALUE && known) pace(ts, index);
  p.origin = Clock::now();
  counters_.packets_read++;
  if (index == video_stream_) {
    if (cut_) p.window = window();
    return out.emit(std::move(p)) ? Flow::kContinue : Flow::kStop;
  }
  if (!copies_.copied(index)) return Flow::kContinue;
  if (copy_until_s_ && ts != AV_NOPTS_VALUE &&
      static_cast<double>(ts) * av_q2d(input_->streams[index]->time_base) >= *copy_until_s_)
    return Flow::kContinue;
  copies_.send(std::move(p), index);
  return Flow::kContinue;
}

void DemuxSource::finish(Output<Packet>& /*out*/) { copies_.finish(); }

void DemuxSource::close() noexcept {
  copies_.close();
  waker_.leave();
}

}  // namespace vpipe
