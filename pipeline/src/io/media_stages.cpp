#include "vpipe/pipeline/io/media_stages.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <utility>

#include "vpipe/base/errors.hpp"

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
