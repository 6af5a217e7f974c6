#include "vpipe/pipeline/io/media_stages.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <csignal>
#include <thread>
#include <utility>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/reencode.hpp"

namespace vpipe {

void remember(std::map<std::int64_t, Clock::time_point>& m, std::int64_t pts, Clock::time_point t) {
  if (pts == AV_NOPTS_VALUE) return;
  m[pts] = t;
  if (m.size() > 4096) m.erase(m.begin());  // bounded: frames that never came out
}
Clock::time_point recall(std::map<std::int64_t, Clock::time_point>& m, std::int64_t pts) {
  auto it = m.find(pts);
  if (it == m.end()) return Clock::now();
  auto t = it->second;
  m.erase(it);
  return t;
}

// ---- demux -----------------------------------------------------------------

DemuxSource::DemuxSource(AVFormatContext* input, std::string path, int video_stream,
                         MediaCounters& counters, bool realtime)
    : input_(input),
      path_(std::move(path)),
      video_stream_(video_stream),
      counters_(counters),
      realtime_(realtime) {}

void DemuxSource::copy_to(std::vector<int> output_index, QueuePtr<Packet> copy_out,
                          std::vector<StreamReencoder*> reencoders) {
  copy_out->add_producer();
  targets_.push_back({std::move(output_index), std::move(copy_out), std::move(reencoders)});
}

bool DemuxSource::copied(int index) const {
  for (const auto& t : targets_)
    if (index >= 0 && index < static_cast<int>(t.output_index.size()) &&
        t.output_index[static_cast<std::size_t>(index)] >= 0)
      return true;
  return false;
}

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
  if (cut_ && cut_->start)  // the next pass's span follows this one's
    offset_s_ += std::min(cut_->end.value_or(pass_end_s_), pass_end_s_) - *cut_->start;
  else if (start_s_)
    offset_s_ += pass_end_s_ - *start_s_;  // (a raw stream has no times: the encoder makes them)
  video_past_end_ = false;
  last_dts_s_.clear();
  return true;
}

// ---- a cut ---------------------------------------------------------------------

void DemuxSource::cut(const Cut& c) {
  cut_ = c;
  if (!c.start) return;  // a live input: the first packet read starts it (apply_cut)
  start_s_ = *c.start;
  if (c.shift) offset_s_ = -*c.start;
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
    if (static_cast<int>(i) != video_stream_ && copied(static_cast<int>(i))) return true;
  return false;
}

FrameWindow DemuxSource::window() const {
  const double q = av_q2d(input_->streams[video_stream_]->time_base);
  // The packets' shift, as retime() applies it: the window moves with them tick for tick.
  const auto shift = static_cast<std::int64_t>(std::llround(offset_s_ / q));
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
    cut_->start = start_s_ = at(any);
    if (cut_->shift) offset_s_ = -*cut_->start;
    if (cut_->duration) cut_->end = *cut_->start + *cut_->duration;
  }
  if (index == video_stream_) {
    if (to_keyframe_ && !(pkt->flags & AV_PKT_FLAG_KEY)) return CutVerdict::kDrop;
    to_keyframe_ = false;
    const std::int64_t d = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
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
      for (auto& t : targets_) {
        if (next->nb_streams != input_->nb_streams || v != video_stream_)
          std::fill(t.output_index.begin(), t.output_index.end(), -1);
        t.output_index.resize(next->nb_streams, -1);
      }
      video_stream_ = v;
      input_ = next.get();
      reopened_.push_back(std::move(next));
      resync_ = true;
      last_dts_s_.clear();
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

// This pass's extent, and the shift that keeps the output's timestamps
// increasing (loops, reconnects, MPEG-TS discontinuities).
void DemuxSource::retime(AVPacket* pkt) {
  const int index = pkt->stream_index;
  const AVRational tb = input_->streams[index]->time_base;
  drop_damaged_pts(pkt);
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
  if ((input_->iformat->flags & AVFMT_TS_DISCONT) && d != AV_NOPTS_VALUE) {
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
      if (pkt->pts != AV_NOPTS_VALUE && !pts_fits(pkt)) pkt->pts += shift;
    }
  }
}

bool DemuxSource::pts_fits(const AVPacket* pkt) const {
  const AVStream* st = input_->streams[pkt->stream_index];
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
void DemuxSource::drop_damaged_pts(AVPacket* pkt) {
  if (!(input_->iformat->flags & AVFMT_TS_DISCONT)) return;
  if (pkt->pts == AV_NOPTS_VALUE || pkt->dts == AV_NOPTS_VALUE || pts_fits(pkt)) return;
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
double DemuxSource::close_up(int index, double out_t, double step) {
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
  if (known) retime(p.pkt.get());
  const std::int64_t ts = p.pkt->dts != AV_NOPTS_VALUE ? p.pkt->dts : p.pkt->pts;
  if (realtime_ && ts != AV_NOPTS_VALUE && known) pace(ts, index);
  p.origin = Clock::now();
  counters_.packets_read++;
  if (index == video_stream_) {
    if (cut_) p.window = window();
    return out.emit(std::move(p)) ? Flow::kContinue : Flow::kStop;
  }
  if (!copied(index)) return Flow::kContinue;
  if (copy_until_s_ && ts != AV_NOPTS_VALUE &&
      static_cast<double>(ts) * av_q2d(input_->streams[index]->time_base) >= *copy_until_s_)
    return Flow::kContinue;
  send_copied(std::move(p), index);
  return Flow::kContinue;
}

void DemuxSource::send_copied(Packet p, int index) {
  for (std::size_t k = 1; k < targets_.size(); ++k) {  // the others get references to it
    UniqueAVPacket ref(av_packet_clone(p.pkt.get()));
    if (!ref) throw std::bad_alloc();
    send_copied(targets_[k], Packet{std::move(ref), p.origin}, index);
  }
  send_copied(targets_.front(), std::move(p), index);
}

void DemuxSource::send_copied(CopyTarget& t, Packet p, int index) {
  const auto i = static_cast<std::size_t>(index);
  if (i >= t.output_index.size() || t.output_index[i] < 0) return;
  const int to = t.output_index[i];
  StreamReencoder* enc = i < t.reencoders.size() ? t.reencoders[i] : nullptr;
  if (!enc) {
    p.pkt->stream_index = to;
    t.out->push(std::move(p));  // false only when the muxer is gone (failure or stop)
    return;
  }
  reencoded(t, index, enc->push(p.pkt.get()), p.origin);
}

// What a re-encoder gave for input stream `index`, to its muxer; a packet it
// could not take (damage in the input) is counted as the muxer counts one it refuses.
void DemuxSource::reencoded(CopyTarget& t, int index, std::vector<UniqueAVPacket> packets,
                            Clock::time_point origin) {
  const auto i = static_cast<std::size_t>(index);
  StreamReencoder* enc = t.reencoders[i];
  if (reencode_errors_.size() <= i) reencode_errors_.resize(i + 1, 0);
  if (const std::int64_t errors = enc->errors(); errors > reencode_errors_[i]) {
    if (counters_.packets_damaged.fetch_add(errors - reencode_errors_[i]) == 0)
      spdlog::warn("{}: a packet of stream #{} did not re-encode ({}); dropped (counted)", path_,
                   index, enc->encoder()->codec->name);
    reencode_errors_[i] = errors;
  }
  for (auto& pkt : packets) {
    pkt->stream_index = t.output_index[i];
    t.out->push(Packet{std::move(pkt), origin});
  }
}

// The end of the input: what each re-encoder holds (its resampler, its
// encoder's delay) goes to the muxer before the queue closes.
void DemuxSource::flush_reencoders() {
  for (auto& t : targets_)
    for (std::size_t i = 0; i < t.reencoders.size(); ++i) {
      if (!t.reencoders[i] || i >= t.output_index.size() || t.output_index[i] < 0) continue;
      reencoded(t, static_cast<int>(i), t.reencoders[i]->push(nullptr), Clock::now());
    }
}

void DemuxSource::finish(Output<Packet>& /*out*/) {
  flush_reencoders();
  for (auto& t : targets_) t.out->close();
  copy_closed_ = true;
}

void DemuxSource::close() noexcept {
  if (!copy_closed_)
    for (auto& t : targets_) t.out->close();
  waker_.leave();
}

void ThreadWaker::enter() {
  std::lock_guard lock(mutex_);
  thread_ = pthread_self();
}

void ThreadWaker::leave() noexcept {
  std::lock_guard lock(mutex_);
  thread_.reset();
}

void ThreadWaker::wake() noexcept {
  struct sigaction current {};
  if (sigaction(SIGURG, nullptr, &current) != 0 || current.sa_handler == SIG_DFL ||
      current.sa_handler == SIG_IGN)
    return;
  std::lock_guard lock(mutex_);
  if (thread_) pthread_kill(*thread_, SIGURG);
}

// ---- in-flight limit ---------------------------------------------------------

std::shared_ptr<void> FlightLimit::acquire(const std::function<bool()>& give_up) {
  std::unique_lock lock(mutex_);
  if (in_flight_ >= limit_) {
    if (drop_) {
      ++dropped_;
      return nullptr;
    }
    const auto t0 = Clock::now();
    while (in_flight_ >= limit_) {
      freed_.wait_for(lock, std::chrono::milliseconds(20));
      if (in_flight_ >= limit_ && give_up()) return nullptr;
    }
    waited_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  high_water_ = std::max(high_water_, ++in_flight_);
  // The ticket holds no data: its deleter returns the slot.
  return std::shared_ptr<void>(this, [](FlightLimit* self) { self->release(); });
}

void FlightLimit::release() {
  {
    std::lock_guard lock(mutex_);
    --in_flight_;
  }
  freed_.notify_one();
}

std::size_t FlightLimit::high_water() const {
  std::lock_guard lock(mutex_);
  return high_water_;
}
std::int64_t FlightLimit::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}
double FlightLimit::waited_s() const {
  std::lock_guard lock(mutex_);
  return waited_s_;
}

// ---- decode ----------------------------------------------------------------

DecodeStage::DecodeStage(UniqueAVCodecContext decoder, AVRational time_base,
                         std::optional<std::int64_t> limit, MediaCounters& counters,
                         const NvdecContext* nvdec)
    : decoder_(std::move(decoder)),
      time_base_(time_base),
      limit_(limit),
      counters_(counters),
      nvdec_(nvdec) {}

void DecodeStage::check_nvdec() const {
  if (!nvdec_) return;
  if (auto why = nvdec_->refusal(); !why.empty())
    throw input_error(fmt::format("NVDEC decode: {} (use decode cpu)", why));
}

Flow DecodeStage::process(Packet packet, Output<Frame>& out) {
  if (packet.drain) {  // the input starts over: how, its first packet decides
    restart_ = true;
    return Flow::kContinue;
  }
  if (std::exchange(restart_, false) && restart(packet, out) == Flow::kStop) return Flow::kStop;
  remember(origin_by_pts_, packet.pkt->pts, packet.origin);
  window_ = packet.window;
  int ret = send(packet.pkt.get());
  if (ret == AVERROR(EAGAIN)) {
    // Output is full: take frames out first, then resend.
    if (receive(out) == Flow::kStop) return Flow::kStop;
    ret = send(packet.pkt.get());
  }
  if (ret < 0 && ret != AVERROR_EOF) {
    check_nvdec();
    counters_.decode_errors++;  // a damaged packet: skip it, keep decoding
    spdlog::debug("decode: packet skipped: {}", av_error_text(ret));
  }
  return receive(out);
}

bool goes_straight_on(const AVCodecContext& decoder, const Packet& next,
                      const FrameWindow& window) {
  return next.window == window && idr_picture(decoder, *next.pkt);
}

// The input started over and `next` is its first packet: every frame held back
// comes out (a drain) and the decoder starts afresh, unless it goes straight on.
Flow DecodeStage::restart(const Packet& next, Output<Frame>& out) {
  if (goes_straight_on(*decoder_, next, window_)) return Flow::kContinue;
  send(nullptr);
  const Flow flow = receive(out);
  avcodec_flush_buffers(decoder_.get());
  return flow;
}

int DecodeStage::send(const AVPacket* pkt) {
  const auto t0 = Clock::now();
  const int ret = avcodec_send_packet(decoder_.get(), pkt);
  clock_.lap(kSend, t0);
  return ret;
}

Frame DecodeStage::as_frame(UniqueAVFrame av) const {
  if (av->format != AV_PIX_FMT_CUDA || !nvdec_)
    return Frame::from_av_frame(std::move(av), time_base_);
  // A cuvid decoder's frame holds no surface: it goes on as it is.
  if (nvdec_->frames_hold_no_surface())
    return Frame::of_cuda_frame(std::move(av), time_base_, nvdec_->stream());
  // The hwaccel's frame is copied out at once: its decode surface goes straight back
  // (nvdec.hpp, kNvdecFramesHeldCopying), however long the pipeline holds the copy.
  return Frame::copy_of_cuda_frame(std::move(av), time_base_, nvdec_->memory(), nvdec_->stream());
}

Flow DecodeStage::receive(Output<Frame>& out) {
  while (true) {
    if (limit_ && next_index_ >= *limit_) return Flow::kStop;
    UniqueAVFrame av = make_av_frame();
    auto t = Clock::now();
    const int ret = avcodec_receive_frame(decoder_.get(), av.get());
    t = clock_.lap(kReceive, t);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return Flow::kContinue;
    if (ret < 0) {
      check_nvdec();
      counters_.decode_errors++;
      spdlog::debug("decode: frame lost: {}", av_error_text(ret));
      continue;
    }
    if (!window_.keeps(av->best_effort_timestamp != AV_NOPTS_VALUE ? av->best_effort_timestamp
                                                                   : av->pts)) {
      counters_.frames_cut++;  // decoded for the frames after it; shown outside the cut
      continue;
    }
    if (av->decode_error_flags || (av->flags & AV_FRAME_FLAG_CORRUPT)) counters_.decode_errors++;
    Frame f = as_frame(std::move(av));
    clock_.lap(kCopy, t);
    clock_.item();
    f.index = next_index_++;
    f.origin = recall(origin_by_pts_, f.pts);
    counters_.frames_decoded++;
    if (flight_) {
      f.ticket = flight_->acquire([&out] { return !out.accepting(); });
      if (!f.ticket) {
        if (!out.accepting()) return Flow::kStop;
        continue;  // dropped at the limit (counted by the limit)
      }
    }
    if (!out.emit(std::move(f))) return Flow::kStop;
  }
}

void DecodeStage::finish(Output<Frame>& out) {
  if (limit_ && next_index_ >= *limit_) return;
  send(nullptr);
  receive(out);
}

// ---- null --------------------------------------------------------------------

Flow NullSink::consume(Frame frame) {
  if (frame.ready) frame.ready->synchronize();  // done means computed
  if (read_stamps_) record_stamp(frame, counters_);
  counters_.count_written(frame.origin);
  if (tap_) tap_(frame);
  return Flow::kContinue;
}

// ---- filter ----------------------------------------------------------------

Flow FilterStage::process(Frame in, Output<Frame>& out) {
  f_.follow(in.format);
  if (f_.filter->is_identity()) return out.emit(std::move(in)) ? Flow::kContinue : Flow::kStop;
  if (in.ready) in.ready->synchronize();  // a download still landing
  Frame result = Frame::allocate_host(f_.out);
  f_.filter->process(in, result);
  result.copy_props_from(in);
  result.set_fields(fields_after(*f_.filter, in.fields));
  return out.emit(std::move(result)) ? Flow::kContinue : Flow::kStop;
}

// ---- encode ----------------------------------------------------------------

EncodeStage::EncodeStage(AVCodecContext* encoder, int out_stream, MediaCounters& counters)
    : encoder_(encoder), out_stream_(out_stream), counters_(counters), input_(encoder, counters) {}

Flow EncodeStage::process(Frame frame, Output<Packet>& out) {
  frame = input_.prepare(std::move(frame), read_stamps_);
  AVFrame* av = frame.av.get();
  remember(origin_by_pts_, av->pts, frame.origin);
  av_check(send_video_frame(encoder_, av), "encoding a frame");
  drain(out);
  return out.downstream_stopped() ? Flow::kStop : Flow::kContinue;
}

Frame EncoderInput::prepare(Frame frame, bool read_stamps) {
  VPIPE_EXPECTS(frame.av && frame.memory == MemoryKind::kHost, "encode: needs a host frame");
  if (frame.ready) frame.ready->synchronize();  // a download still landing
  if (const FrameFormat want{encoder_->pix_fmt, encoder_->width, encoder_->height};
      frame.format != want) {
    // The picture size changed mid-stream and nothing in the chain fixed it:
    // the encoder cannot change size, so scale to what it was opened for.
    if (!fit_ || fit_from_ != frame.format) {
      spdlog::warn(
          "encode: frames are now {} from frame {} on; scaling them to the encoder's {} "
          "(put resize= in the chain to choose)",
          to_string(frame.format), frame.index, to_string(want));
      fit_.reset(sws_getContext(frame.format.width, frame.format.height, frame.format.pix_fmt,
                                want.width, want.height, want.pix_fmt, SWS_BILINEAR, nullptr,
                                nullptr, nullptr));
      if (!fit_)
        throw logic_error(
            fmt::format("encode: cannot scale {} to {}", to_string(frame.format), to_string(want)));
      fit_from_ = frame.format;
    }
    Frame fitted = Frame::allocate_host(want);
    sws_scale(fit_.get(), frame.av->data, frame.av->linesize, 0, frame.format.height,
              fitted.av->data, fitted.av->linesize);
    fitted.copy_props_from(frame);
    frame = std::move(fitted);
    counters_.frames_fitted++;
  }
  if (read_stamps) record_stamp(frame, counters_);
  frame.av->pts = monotonic_pts(frame);
  frame.av->pict_type = AV_PICTURE_TYPE_NONE;
  if (key_step_us_ > 0) mark_keyframe(frame.av.get());
  return frame;
}

void EncoderInput::mark_keyframe(AVFrame* av) {
  if (!key_origin_) key_origin_ = av->pts;
  const std::int64_t since = av->pts - *key_origin_;
  auto reached = [&] {
    return av_compare_ts(since, encoder_->time_base, key_step_us_ * next_key_, AV_TIME_BASE_Q) >= 0;
  };
  if (!reached()) return;
  av->pict_type = AV_PICTURE_TYPE_I;
  while (reached()) ++next_key_;
}

TimestampRepair::Time TimestampRepair::next(std::int64_t pts) {
  Time t{0, false};
  if (pts == AV_NOPTS_VALUE) {
    t.pts = last_ == AV_NOPTS_VALUE ? 0 : last_ + step_;
  } else if (const std::int64_t at = pts + offset_;
             last_ == AV_NOPTS_VALUE || (at > last_ && at - last_ <= max_gap_)) {
    t.pts = at;
  } else {
    t = {last_ + step_, true};
    offset_ = t.pts - pts;
  }
  last_ = t.pts;
  return t;
}

// The frame's time in the encoder's time base, strictly after the last one:
// a raw elementary stream (Annex-B .h264/.hevc) has no timestamps, so they
// come from the frame rate, as ffmpeg makes them; a damaged input's time that
// goes back or leaps ahead is repaired (TimestampRepair, counted), rather than
// ending the run or stretching the file.
std::int64_t EncoderInput::monotonic_pts(const Frame& frame) {
  if (!times_) {
    const AVRational rate = encoder_->framerate, tb = encoder_->time_base;
    const std::int64_t step = rate.num > 0 && rate.den > 0
                                  ? std::max<std::int64_t>(1, av_rescale_q(1, av_inv_q(rate), tb))
                                  : 1;
    // A gap up to 10 s (or 300 frames, at a low rate) is the input's own: a
    // camera's pause, a live feed's outage. Past that it is damage.
    times_.emplace(step, std::max(300 * step, av_rescale_q(10, AVRational{1, 1}, tb)));
  }
  const std::int64_t pts = frame.pts == AV_NOPTS_VALUE
                               ? AV_NOPTS_VALUE
                               : av_rescale_q(frame.pts, frame.time_base, encoder_->time_base);
  const auto t = times_->next(pts);
  if (t.repaired && counters_.timestamps_repaired++ == 0)
    spdlog::warn(
        "encode: frame {}'s time {} does not follow the last; it takes the next frame's "
        "slot, {} (counted)",
        frame.index, pts, t.pts);
  return t.pts;
}

void EncodeStage::drain(Output<Packet>& out) {
  while (true) {
    Packet p{make_av_packet(), {}};
    const int ret = avcodec_receive_packet(encoder_, p.pkt.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    av_check(ret, "encoding a frame");
    count_encoded(*p.pkt, *encoder_, counters_);
    p.origin = recall(origin_by_pts_, p.pkt->pts);
    p.pkt->stream_index = out_stream_;
    if (!out.emit(std::move(p))) return;
  }
}

void EncodeStage::finish(Output<Packet>& out) {
  av_check(send_video_frame(encoder_, nullptr), "flushing the encoder");
  drain(out);
}

// ---- mux -------------------------------------------------------------------

MuxSink::MuxSink(AVFormatContext* output, std::string path,
                 std::vector<AVRational> source_time_base, int video_stream,
                 MediaCounters& counters)
    : output_(output),
      path_(std::move(path)),
      source_time_base_(std::move(source_time_base)),
      video_stream_(video_stream),
      counters_(counters) {}

// A copied packet (audio, subtitles) the output cannot take: no timestamp
// after a timestamped one, a time going backwards (damage the demuxer
// passed on). Dropped and counted, so every good packet after it is kept.
bool MuxSink::damaged(const AVPacket* pkt) {
  const auto index = static_cast<std::size_t>(pkt->stream_index);
  if (last_dts_.size() <= index) {
    last_dts_.resize(index + 1, AV_NOPTS_VALUE);
    leaps_.resize(index + 1, 0);
  }
  std::int64_t& last = last_dts_[index];
  const std::int64_t dts = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
  if (dts == AV_NOPTS_VALUE) return last != AV_NOPTS_VALUE;
  const bool equal_ok = (output_->oformat->flags & AVFMT_TS_NONSTRICT) != 0;
  if (last != AV_NOPTS_VALUE && (dts < last || (dts == last && !equal_ok))) return true;
  // A leap of more than 10 s is one damaged time (dropped: the packets after it
  // would all go back) unless 8 packets in a row agree: then the input jumped.
  const AVRational tb = output_->streams[index]->time_base;
  if (last != AV_NOPTS_VALUE && dts - last > av_rescale_q(10, AVRational{1, 1}, tb) &&
      ++leaps_[index] < 8)
    return true;
  leaps_[index] = 0;
  last = dts;
  return false;
}

Flow MuxSink::consume(Packet packet) {
  if (files_) files_->check();  // a segment the last packets closed
  AVPacket* pkt = packet.pkt.get();
  const auto index = static_cast<std::size_t>(pkt->stream_index);
  av_packet_rescale_ts(pkt, source_time_base_.at(index), output_->streams[index]->time_base);
  pkt->pos = -1;
  const bool video = pkt->stream_index == video_stream_;
  if (!video) {
    // A copied packet the muxer refuses (a broken ADTS header the AAC
    // filter chokes on, a time out of order) is damage in the input: drop
    // it, count it, keep the rest of the file.
    const int ret = damaged(pkt) ? AVERROR_INVALIDDATA : av_interleaved_write_frame(output_, pkt);
    if (ret == AVERROR_EXIT) return stop_writing();
    if (ret < 0) {
      if (counters_.packets_damaged++ == 0)
        spdlog::warn("{}: a copied packet (stream #{}) was refused: {}; dropped (counted)", path_,
                     pkt->stream_index, av_error_text(ret));
      return Flow::kContinue;
    }
    counters_.other_packets_written++;
    return Flow::kContinue;
  }
  const int ret = av_interleaved_write_frame(output_, pkt);
  if (ret == AVERROR_EXIT) return stop_writing();
  av_check(ret, fmt::format("writing '{}'", path_));
  counters_.count_written(packet.origin);
  return Flow::kContinue;
}

Flow MuxSink::stop_writing() {
  cut_ = true;
  spdlog::warn("{}: stopped writing after Ctrl-C: it was not taking data; what was written stays",
               path_);
  return Flow::kStop;
}

void MuxSink::finish() {
  if (cut_) return;
  const int ret = av_write_trailer(output_);
  if (ret == AVERROR_EXIT) {
    (void)stop_writing();
    return;
  }
  av_check(ret, fmt::format("finishing '{}'", path_));
  if (files_) files_->check();  // the last segment and the index, closed by the trailer
}

}  // namespace vpipe
