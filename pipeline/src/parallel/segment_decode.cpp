#include "vpipe/pipeline/parallel/segment_decode.hpp"

#include "vpipe/pipeline/graph/pipeline.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace vpipe {

bool is_open_gop(const std::vector<std::int64_t>& pts) {
  if (pts.empty() || pts.front() == AV_NOPTS_VALUE) return false;
  return std::any_of(pts.begin() + 1, pts.end(),
                     [&](std::int64_t p) { return p != AV_NOPTS_VALUE && p < pts.front(); });
}

namespace {

constexpr const char* kDecodeOrderTimes =
    "timestamps in decode order (pts = dts, with B-frames: a raw stream remuxed), so GOPs "
    "cannot be told open or closed";

UniqueAVPacket clone(const AVPacket* p) {
  UniqueAVPacket c(av_packet_clone(p));
  if (!c) throw std::bad_alloc();
  return c;
}

// Every frame the decoder gives for what was sent so far (all of it after a flush).
void drain_frames(DecoderSession& s, std::int64_t& errors,
                  const std::function<void(UniqueAVFrame)>& take) {
  for (;;) {
    UniqueAVFrame av = make_av_frame();
    const int ret = avcodec_receive_frame(s.context.get(), av.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    if (ret < 0) {
      ++errors;
      continue;
    }
    if (av->decode_error_flags || (av->flags & AV_FRAME_FLAG_CORRUPT)) ++errors;
    take(std::move(av));
  }
}

void send(DecoderSession& s, const AVPacket* pkt, AVRational tb, std::vector<Frame>& out,
          std::int64_t& errors) {
  decode_packet(s, pkt, errors, [&](UniqueAVFrame av) {
    // A segment's frames wait for the segments before it: NVDEC's are copied
    // out, so they do not hold its decode surfaces (32 at most) meanwhile.
    out.push_back(
        av->format == AV_PIX_FMT_CUDA && s.nvdec
            ? Frame::copy_of_cuda_frame(std::move(av), tb, s.nvdec->memory(), s.nvdec->stream())
            : Frame::from_av_frame(std::move(av), tb));
  });
}

}  // namespace

void decode_packet(DecoderSession& s, const AVPacket* pkt, std::int64_t& errors,
                   const std::function<void(UniqueAVFrame)>& take) {
  int ret = avcodec_send_packet(s.context.get(), pkt);
  if (ret == AVERROR(EAGAIN)) {  // the decoder is full: take its frames, then send again
    drain_frames(s, errors, take);
    ret = avcodec_send_packet(s.context.get(), pkt);
  }
  if (ret < 0 && ret != AVERROR_EOF) ++errors;  // a damaged packet: skipped, counted
  drain_frames(s, errors, take);
}

SegmentDecodeStage::SegmentDecodeStage(int sessions, Factory make_session, AVRational time_base,
                                       std::optional<std::int64_t> limit, MediaCounters& counters,
                                       std::size_t max_segment, int per_session, Auto measure)
    : sessions_(std::max(1, sessions)),
      make_session_(std::move(make_session)),
      time_base_(time_base),
      limit_(limit),
      counters_(counters),
      max_segment_(max_segment),
      per_session_(std::max(1, per_session)),
      governor_(std::move(measure.governor)),
      plain_(governor_ ? std::move(measure.plain) : nullptr),
      plain_base_(counters.frames_decoded.load()),
      active_(governor_ ? 1 : sessions_) {
  if (governor_ && !plain_) throw std::invalid_argument("decode sessions auto: no plain decoder");
  int device = 0;  // the workers decode on the device their creator had current (see Pipeline::run)
  if (cudaGetDevice(&device) != cudaSuccess) device = 0;
  for (int w = 0; w < sessions_; ++w)
    workers_.emplace_back([this, w, device] {
      if (device > 0) (void)cudaSetDevice(device);
      work(w);
    });
}

SegmentDecodeStage::~SegmentDecodeStage() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

// What a worker does next, waiting under `lock` until there is something:
// take a segment, or (have = false) drain its decoder. A worker whose decoder
// holds the segment the output waits for never drains while more input may
// come: it says it is starved, the input goes past the window (submit), and
// the next segment it sends pushes the head's last pictures out. Draining
// would make FFmpeg set the decoder up again (a restart) and stall every
// session behind the head. Returns false when stopped with nothing left.
bool SegmentDecodeStage::next_step(int index, Worker& w, Segment& seg, bool& have,
                                   std::unique_lock<std::mutex>& lock) {
  for (;;) {
    const bool head = std::any_of(w.pending.begin(), w.pending.end(),
                                  [&](const Pending& p) { return p.seg.seq == next_emit_; });
    if (index < active_ && !todo_.empty() && (todo_.front().seq <= next_emit_ + window() || head)) {
      seg = std::move(todo_.front());
      todo_.pop_front();
      have = true;
      return true;
    }
    if (!w.pending.empty() && ((head && no_more_segments_) || stop_)) return true;  // drain
    if (stop_) return false;
    if (head && !w.pending.empty() && starved_ != next_emit_) {
      starved_ = next_emit_;
      cv_.notify_all();
    }
    cv_.wait(lock);
  }
}

// A worker: its own session, its segments one after another (see the header).
void SegmentDecodeStage::work(int worker) {
  Worker w;
  for (;;) {
    Segment seg;
    bool have = false;
    {
      std::unique_lock lock(m_);
      if (!next_step(worker, w, seg, have, lock)) return;  // stopped, nothing left
    }
    try {
      if (!w.session) w.session.emplace(make_session_());
      if (have) {
        spdlog::debug("decode: worker {} takes segment {}", worker, seg.seq);
        decode_into(w, std::move(seg));
      } else {
        drain(w);  // the output waits for a segment still in this decoder
      }
    } catch (...) {
      std::lock_guard lock(m_);
      if (!error_) error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
  }
}

namespace {
// Every packet's pts, if each has its own (frames are told apart by it).
std::optional<std::set<std::int64_t>> distinct_pts(const std::vector<UniqueAVPacket>& packets) {
  std::set<std::int64_t> pts;
  for (const auto& p : packets)
    if (p->pts == AV_NOPTS_VALUE || !pts.insert(p->pts).second) return std::nullopt;
  return pts;
}
}  // namespace

void SegmentDecodeStage::decode_into(Worker& w, Segment seg) {
  Pending cur;
  const auto own = distinct_pts(seg.packets);
  // An open GOP continues the decoder only right after the GOP before it.
  const bool follows = w.last_seq == seg.seq - 1 && !w.drained;
  if (seg.fresh || !own || (!seg.prefix.empty() && !follows)) {
    drain(w);
    cur.seg = std::move(seg);
    alone(w, std::move(cur));
    return;
  }
  cur.own = *own;
  if (w.drained) {
    avcodec_flush_buffers(w.session->context.get());
    w.drained = false;
  }
  w.last_seq = seg.seq;
  cur.seg = std::move(seg);
  w.pending.push_back(std::move(cur));
  std::vector<Frame> frames;
  for (const auto& p : w.pending.back().seg.packets) {  // the prefix is in the decoder already
    send(*w.session, p.get(), time_base_, frames, w.pending.back().done.errors);
    route(w, {}, frames);
  }
  while (!w.pending.empty() && w.pending.front().complete() && !w.pending.front().anomalous &&
         w.pending.size() > 1) {
    publish(w.pending.front().seg.seq, std::move(w.pending.front().done));
    w.pending.pop_front();
  }
  // A segment whose pictures did not all come out (a damaged packet gives none)
  // must not wait for ever: past two, the decoder is drained.
  if (w.pending.size() > 2) drain(w);
}

// Each frame to the pending segment that owns its pts, noting a picture that
// comes twice, out of order or unowned (that segment is decoded again alone).
void SegmentDecodeStage::route(Worker& w, const std::set<std::int64_t>& prefix,
                               std::vector<Frame>& frames) const {
  for (auto& f : frames) {
    auto owner = std::find_if(w.pending.begin(), w.pending.end(),
                              [&](const Pending& p) { return p.own.count(f.pts) > 0; });
    if (owner == w.pending.end()) {
      if (!prefix.count(f.pts) && !w.pending.empty()) w.pending.back().anomalous = true;
      continue;
    }
    const bool in_order = owner->received.empty() || *owner->received.rbegin() < f.pts;
    if (!owner->received.insert(f.pts).second || !in_order) owner->anomalous = true;
    owner->done.frames.push_back(std::move(f));
  }
  frames.clear();
}

// End of stream to the decoder: what it holds comes out; a segment that did
// not come out right is decoded again alone.
void SegmentDecodeStage::drain(Worker& w) {
  if (w.pending.empty()) return;
  spdlog::debug("decode: drain with {} pending (first {}, {} of {} out)", w.pending.size(),
                w.pending.front().seg.seq, w.pending.front().received.size(),
                w.pending.front().own.size());
  std::vector<Frame> frames;
  send(*w.session, nullptr, time_base_, frames, w.pending.back().done.errors);
  route(w, {}, frames);
  w.drained = true;
  w.last_seq = -2;
  {
    std::lock_guard lock(m_);
    ++stats_.restarts;
  }
  auto pending = std::exchange(w.pending, {});
  for (auto& p : pending) {
    if (p.complete() && !p.anomalous) {
      publish(p.seg.seq, std::move(p.done));
    } else {
      spdlog::debug("decode: segment {} came out {} of {} pictures{}: decoded again alone",
                    p.seg.seq, p.received.size(), p.own.size(),
                    p.anomalous ? ", out of order" : "");
      alone(w, std::move(p));
    }
  }
}

void SegmentDecodeStage::alone(Worker& w, Pending p) {
  spdlog::debug("decode: segment {} alone", p.seg.seq);
  {
    std::lock_guard lock(m_);
    ++stats_.restarts;
  }
  Done done = decode(*w.session, p.seg);
  w.drained = true;
  w.last_seq = -2;
  publish(p.seg.seq, std::move(done));
}

void SegmentDecodeStage::publish(std::int64_t seq, Done done) {
  std::lock_guard lock(m_);
  done_[seq] = std::move(done);
  cv_.notify_all();
}

// One segment, alone: the decoder starts clean and is emptied at the end. An
// open GOP is preceded by the previous GOP; only this GOP's pictures are kept.
SegmentDecodeStage::Done SegmentDecodeStage::decode(DecoderSession& s, Segment& seg) const {
  Done done;
  std::vector<Frame> frames;
  avcodec_flush_buffers(s.context.get());
  for (const auto& p : seg.prefix) send(s, p.get(), time_base_, frames, done.errors);
  for (const auto& p : seg.packets) send(s, p.get(), time_base_, frames, done.errors);
  send(s, nullptr, time_base_, frames, done.errors);
  if (seg.prefix.empty()) {
    done.frames = std::move(frames);
    return done;
  }
  std::unordered_set<std::int64_t> own;
  for (const auto& p : seg.packets) own.insert(p->pts);
  for (auto& f : frames)
    if (own.count(f.pts)) done.frames.push_back(std::move(f));
  return done;
}

void SegmentDecodeStage::submit(Output<Frame>& out) {
  if (current_.empty()) return;
  Segment seg;
  seg.seq = next_seq_++;
  windows_[seg.seq] = window_;
  seg.fresh = std::exchange(fresh_next_, false);
  std::vector<std::int64_t> pts;
  for (const auto& p : current_) pts.push_back(p->pts);
  const bool open = is_open_gop(pts) && !previous_.empty();
  if (open)
    for (const auto& p : previous_) seg.prefix.push_back(clone(p.get()));
  previous_ = std::move(current_);
  current_.clear();
  for (const auto& p : previous_) seg.packets.push_back(clone(p.get()));
  {
    std::lock_guard lock(m_);
    ++stats_.segments;
    stats_.open_gops += open ? 1 : 0;
    todo_.push_back(std::move(seg));
  }
  cv_.notify_all();
  // At most three segments per session in flight, so memory stays bounded: one
  // whose last pictures are still in the decoder, one being sent, one queued;
  // more only while the worker holding the head is starved (next_step).
  (void)emit_ready(out, false);
  std::unique_lock lock(m_);
  cv_.wait(lock, [&] {
    return error_ || next_seq_ - next_emit_ <= window() || done_.count(next_emit_) ||
           starved_ == next_emit_;
  });
}

Flow SegmentDecodeStage::emit(Frame f, Output<Frame>& out) {
  if (limit_ && next_index_ >= *limit_) return Flow::kStop;
  f.index = next_index_++;
  f.origin = recall(origin_by_pts_, f.pts);
  counters_.frames_decoded++;
  return out.emit(std::move(f)) ? Flow::kContinue : Flow::kStop;
}

// The finished segments at the head, in order (all of them, waiting, at the end).
Flow SegmentDecodeStage::emit_ready(Output<Frame>& out, bool wait_all) {
  for (;;) {
    Done done;
    FrameWindow window;
    {
      std::unique_lock lock(m_);
      if (wait_all)
        cv_.wait(lock,
                 [&] { return error_ || done_.count(next_emit_) || next_emit_ == next_seq_; });
      if (error_) std::rethrow_exception(error_);
      const auto it = done_.find(next_emit_);
      if (it == done_.end()) return Flow::kContinue;
      done = std::move(it->second);
      done_.erase(it);
      if (const auto w = windows_.find(next_emit_); w != windows_.end()) {
        window = w->second;
        windows_.erase(w);
      }
      ++next_emit_;
    }
    cv_.notify_all();
    counters_.decode_errors += done.errors;
    for (auto& f : done.frames) {
      if (!window.keeps(f.pts)) {
        counters_.frames_cut++;  // decoded from the keyframe before the cut, shown outside it
        continue;
      }
      if (emit(std::move(f), out) == Flow::kStop) return Flow::kStop;
    }
  }
}

Flow SegmentDecodeStage::decode_inline(UniqueAVPacket pkt, Output<Frame>& out) {
  std::vector<Frame> frames;
  std::int64_t errors = 0;
  send(*inline_, pkt.get(), time_base_, frames, errors);
  counters_.decode_errors += errors;
  for (auto& f : frames) {
    if (!window_.keeps(f.pts)) {
      counters_.frames_cut++;
      continue;
    }
    if (emit(std::move(f), out) == Flow::kStop) return Flow::kStop;
  }
  return Flow::kContinue;
}

Flow SegmentDecodeStage::process(Packet packet, Output<Frame>& out) {
  if (plain_) return through_plain(std::move(packet), out);
  if (packet.drain) {  // the input starts over: this segment ends here
    if (inline_) {
      inline_restart_ = true;  // how, the next pass's first packet decides (through_inline)
      return Flow::kContinue;
    }
    submit(out);
    previous_.clear();  // the next GOP does not follow this one
    fresh_next_ = true;
    return emit_ready(out, false);
  }
  remember(origin_by_pts_, packet.pkt->pts, packet.origin);
  if (inline_) return through_inline(std::move(packet), out);
  // A packet without a time (a raw .h264): frames cannot be matched to their
  // segment, nor an open GOP told from a closed one (its leading pictures would
  // be lost), so one session decodes from here.
  if (packet.pkt->pts == AV_NOPTS_VALUE) {
    window_ = packet.window;
    current_.push_back(std::move(packet.pkt));
    return take_over("a packet without a timestamp (a raw stream)", out);
  }
  const bool key = (packet.pkt->flags & AV_PKT_FLAG_KEY) != 0;
  if (key && times_in_decode_order()) {
    current_.push_back(std::move(packet.pkt));
    return take_over(kDecodeOrderTimes, out);
  }
  // A segment starts at a keyframe; packets before the first one go with the
  // first segment, decoded from the start as one decoder would.
  if (key && !current_.empty()) submit(out);
  window_ = packet.window;  // after the segment before went, with its own
  current_.push_back(std::move(packet.pkt));
  if (current_.size() > max_segment_)
    return take_over(fmt::format("no keyframe for {} packets", max_segment_), out);
  return emit_ready(out, false);
}

// One session after a fallback, as a plain decode: when the input started
// over, it drains and flushes (a restart, counted) unless the new pass goes
// straight on (goes_straight_on: at an H.264 or HEVC IDR).
Flow SegmentDecodeStage::through_inline(Packet packet, Output<Frame>& out) {
  if (std::exchange(inline_restart_, false) &&
      !goes_straight_on(*inline_->context, packet, window_)) {
    if (decode_inline(nullptr, out) == Flow::kStop) return Flow::kStop;
    avcodec_flush_buffers(inline_->context.get());
    std::lock_guard lock(m_);
    ++stats_.restarts;
  }
  window_ = packet.window;
  return decode_inline(std::move(packet.pkt), out);
}

// --decode-sessions auto, step 2 (see the header): the plain decoder takes
// every packet; the GOP being decoded and the one before are kept (cloned),
// so that segments can start at the next keyframe with an open GOP's prefix.
Flow SegmentDecodeStage::through_plain(Packet packet, Output<Frame>& out) {
  if (packet.drain) {  // the input starts over: no GOP before the next one
    current_.clear();
    previous_.clear();
    return plain_->process(std::move(packet), out);
  }
  const bool key = (packet.pkt->flags & AV_PKT_FLAG_KEY) != 0;
  if ((governor_ || widen_at_key_) && key && times_in_decode_order()) keep_plain(kDecodeOrderTimes);
  if (widen_at_key_ && key) return widen(std::move(packet), out);
  if (governor_ || widen_at_key_) {
    if (packet.pkt->pts == AV_NOPTS_VALUE) {
      keep_plain("a packet without a timestamp (a raw stream): segments cannot be told apart");
    } else {
      if (key) previous_ = std::exchange(current_, {});
      current_.push_back(clone(packet.pkt.get()));
      if (current_.size() > max_segment_)
        keep_plain(fmt::format("no keyframe for {} packets", max_segment_));
    }
  }
  const auto t0 = Clock::now();
  const std::int64_t before = counters_.frames_decoded.load();
  const Flow flow = plain_->process(std::move(packet), out);
  next_index_ = counters_.frames_decoded.load() - plain_base_;
  if (marked_at_ >= 0 && governor_) {  // the span: its time in the decoder, emitting included
    probe_decode_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
    probe_frames_ += next_index_ - (before - plain_base_);
    if (key) {  // the mean GOP: from the span's first keyframe to its last
      if (probe_keys_++ == 0) first_key_at_ = probe_packets_;
      last_key_at_ = probe_packets_;
    }
    ++probe_packets_;
  }
  return flow == Flow::kStop ? Flow::kStop : govern();
}

// The governor's span starts at the kMarkFrames-th frame out and ends
// kDecideFrames - kMarkFrames frames later; then segments take over at the
// next keyframe, or the plain decoder goes on, exactly as --decode-sessions 1.
// The span's time includes waits to hand frames on: a slow downstream makes
// one session look slower, which only keeps it at one.
Flow SegmentDecodeStage::govern() {
  if (!governor_) return Flow::kContinue;
  if (marked_at_ < 0) {
    if (next_index_ >= kMarkFrames) {
      governor_->mark();
      marked_at_ = next_index_;
    }
    return Flow::kContinue;
  }
  if (next_index_ < marked_at_ + (kDecideFrames - kMarkFrames)) return Flow::kContinue;
  const double fps = probe_decode_s_ > 0 ? static_cast<double>(probe_frames_) / probe_decode_s_ : 0;
  const double gop = probe_keys_ >= 2 ? static_cast<double>(last_key_at_ - first_key_at_) /
                                            static_cast<double>(probe_keys_ - 1)
                                      : static_cast<double>(probe_packets_);
  const AutoSessions pick = governor_->decide(fps, next_index_, per_session_ * gop);
  governor_.reset();
  const int n = std::clamp(pick.sessions, 1, sessions_);
  spdlog::info("decode: decode_sessions auto: {} ({})", n, pick.why);
  std::lock_guard lock(m_);
  stats_.measured = fmt::format("{} ({})", n, pick.why);
  if (n > 1) {
    active_ = n;
    widen_at_key_ = true;
  } else {
    current_.clear();
    previous_.clear();
  }
  return Flow::kContinue;
}

// Auto stays at one session before it decided: the span cannot be cut into
// segments from here (the governor is dropped; the report says why).
bool SegmentDecodeStage::times_in_decode_order() const {
  return reorders_ && current_.size() > 1 &&
         std::all_of(current_.begin(), current_.end(),
                     [](const UniqueAVPacket& p) { return p->pts == p->dts; });
}

void SegmentDecodeStage::keep_plain(const std::string& why) {
  spdlog::info("decode: decode_sessions auto: 1 ({})", why);
  governor_.reset();
  widen_at_key_ = false;
  current_.clear();
  previous_.clear();
  std::lock_guard lock(m_);
  stats_.measured = fmt::format("1 ({})", why);
  active_ = 1;
}

// Auto chose more sessions: the plain decoder gives every frame before `key`,
// then segments start there (an open GOP decoded after the GOP before it).
Flow SegmentDecodeStage::widen(Packet key, Output<Frame>& out) {
  plain_->finish(out);  // drained: it decodes no more
  next_index_ = counters_.frames_decoded.load() - plain_base_;
  {
    std::lock_guard lock(m_);
    stats_.plain_frames = next_index_;
  }
  retired_ = std::move(plain_);
  widen_at_key_ = false;
  previous_ = std::exchange(current_, {});
  fresh_next_ = true;  // nothing carries in: the first segment is decoded alone
  spdlog::info("decode: {} sessions from frame {}", active_, next_index_);
  return process(std::move(key), out);
}

// The segments so far are finished and emitted; one session decodes the rest,
// starting with the packets of the segment being gathered.
Flow SegmentDecodeStage::take_over(const std::string& why, Output<Frame>& out) {
  spdlog::info("decode: {}: one decoder session from here", why);
  end_of_segments();
  if (emit_ready(out, true) == Flow::kStop) return Flow::kStop;
  {
    std::lock_guard lock(m_);
    stats_.fell_back = why;
  }
  inline_.emplace(make_session_());
  auto pending = std::move(current_);
  current_.clear();
  for (auto& p : pending)
    if (decode_inline(std::move(p), out) == Flow::kStop) return Flow::kStop;
  return Flow::kContinue;
}

void SegmentDecodeStage::finish(Output<Frame>& out) {
  if (plain_) {
    plain_->finish(out);
    std::lock_guard lock(m_);
    stats_.plain_frames = counters_.frames_decoded.load() - plain_base_;
    return;
  }
  if (inline_) {
    (void)decode_inline(nullptr, out);
    return;
  }
  submit(out);
  end_of_segments();
  (void)emit_ready(out, true);
}

void SegmentDecodeStage::end_of_segments() {
  {
    std::lock_guard lock(m_);
    no_more_segments_ = true;
  }
  cv_.notify_all();
}

SegmentDecodeStats SegmentDecodeStage::stats() const {
  std::lock_guard lock(m_);
  SegmentDecodeStats s = stats_;
  s.sessions = active_;
  return s;
}

AutoSessions auto_decode_sessions(const AutoSessionsInput& in, int most) {
  if (!in.nvdec) return {1, "the CPU decoder threads one session"};
  if (in.live) return {1, "a live run: segments would hold frames and add their span to latency"};
  if (in.codec != AV_CODEC_ID_H264 && in.codec != AV_CODEC_ID_HEVC &&
      in.codec != AV_CODEC_ID_MPEG2VIDEO)
    return {1, fmt::format("{}: segment decode is tested on H.264, HEVC and MPEG-2 only",
                           avcodec_get_name(in.codec))};
  const std::string load = in.engine_load_pct
                               ? fmt::format("NVDEC engines {:.0f} % busy", *in.engine_load_pct)
                               : std::string("NVDEC; NVML not loaded, engines taken as idle");
  if (in.engine_load_pct.value_or(0) >= 50) return {1, load};
  const std::size_t per_session = static_cast<std::size_t>(in.segments_per_session) *
                                  in.segment_frames * std::max<std::size_t>(in.frame_bytes, 1);
  int sessions = most;
  if (in.memory_bytes)
    sessions = static_cast<int>(
        std::min<std::size_t>(static_cast<std::size_t>(most), *in.memory_bytes / 2 / per_session));
  if (sessions < 2)
    return {1, fmt::format("{}; a session's segments ({} MB) would not fit twice in half of {} MB",
                           load, per_session >> 20, in.memory_bytes.value_or(0) >> 20)};
  return {sessions, sessions < most ? fmt::format("{}; {} sessions' segments fit in half of {} MB",
                                                  load, sessions, *in.memory_bytes >> 20)
                                    : load};
}

AutoSessions sessions_from_rates(const MeasuredRates& r, int most) {
  if (r.decode_fps <= 0 || r.downstream_fps <= 0)
    return {1, "nothing measured over the first frames: one session"};
  const std::string rates = fmt::format(
      "one session decodes {:.0f} fps, {} takes {:.0f}", r.decode_fps,
      r.slowest.empty() ? std::string("the slowest stage after it") : r.slowest, r.downstream_fps);
  if (r.remaining_frames > 0 && r.remaining_frames < kMinFramesToWiden)
    return {1, fmt::format("{} frames left: fewer than {}, too few to pay for starting more "
                           "sessions",
                           r.remaining_frames, kMinFramesToWiden)};
  if (r.downstream_fps < r.decode_fps * kSessionHeadroom)
    return {1, rates + ": bound downstream, more sessions would only hold frames"};
  if (r.latency_ms > 0) {
    const double held_ms = r.hold_frames / r.decode_fps * 1000;
    if (r.latency_ms + held_ms > kLatencyBound * r.latency_ms)
      return {1, fmt::format("{}: decode is the bound, but more sessions would hold {:.0f} frames "
                             "(~{:.0f} ms) beside one session's p50 latency of {:.0f} ms, over "
                             "{:.0f}x it; decode_sessions N trades that latency for speed",
                             rates, r.hold_frames, held_ms, r.latency_ms, kLatencyBound)};
  }
  const int wanted = static_cast<int>(std::ceil(r.downstream_fps / r.decode_fps));
  int sessions = std::clamp(wanted, 1, std::max(1, most));
  std::string why = fmt::format("{}: decode is the bound", rates);
  if (r.encoder_threads > 0) {  // each session's thread would take a core from the encoder
    const int spare = std::max(1, r.cores - r.encoder_threads);
    if (spare < sessions)
      why += fmt::format("; the CPU encoder's {} threads leave {} of {} cores", r.encoder_threads,
                         spare, r.cores);
    sessions = std::min(sessions, spare);
  }
  return {sessions, why};
}

namespace {

class PipelineGovernor final : public SessionGovernor {
 public:
  PipelineGovernor(const Pipeline& pipeline, const Histogram& latency, int encoder_threads,
                   int most, std::int64_t expected)
      : pipeline_(pipeline),
        latency_(latency),
        encoder_threads_(encoder_threads),
        most_(most),
        expected_(expected) {}
  void mark() override { before_ = pipeline_.stage_stats(); }
  AutoSessions decide(double one_session_fps, std::int64_t frames_out,
                      double hold_frames) override {
    MeasuredRates r;
    r.decode_fps = one_session_fps;
    r.hold_frames = hold_frames;
    if (latency_.count() > 0) r.latency_ms = static_cast<double>(latency_.percentile(0.5)) / 1e6;
    if (expected_ > 0) r.remaining_frames = std::max<std::int64_t>(1, expected_ - frames_out);
    r.encoder_threads = encoder_threads_;
    r.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (const auto& now : pipeline_.stage_stats()) {
      if (now.name == "demux" || now.name.rfind("decode", 0) == 0) continue;
      const auto was = std::find_if(before_.begin(), before_.end(),
                                    [&](const StageStats& b) { return b.name == now.name; });
      const double items = static_cast<double>(now.items_in) -
                           (was != before_.end() ? static_cast<double>(was->items_in) : 0);
      const double busy = now.busy_s - (was != before_.end() ? was->busy_s : 0);
      if (items < 10) continue;  // not on the frames' path, or not reached yet
      const double fps = busy > 0 ? items / busy : 1e9;
      if (r.downstream_fps == 0 || fps < r.downstream_fps) {
        r.downstream_fps = fps;
        r.slowest = now.name;
      }
    }
    return sessions_from_rates(r, most_);
  }

 private:
  const Pipeline& pipeline_;
  const Histogram& latency_;
  int encoder_threads_;
  int most_;
  std::int64_t expected_;
  std::vector<StageStats> before_;
};

}  // namespace

std::unique_ptr<SessionGovernor> make_pipeline_governor(const Pipeline& pipeline,
                                                        const Histogram& latency,
                                                        int encoder_threads, int most,
                                                        std::int64_t expected_frames) {
  return std::make_unique<PipelineGovernor>(pipeline, latency, encoder_threads, most,
                                            expected_frames);
}

}  // namespace vpipe
