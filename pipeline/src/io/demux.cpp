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
  if (!(cut_ && cut_->cut().start ? seek_to_cut() : seek_to_start())) {
    if (!reopen_loop_) {
      spdlog::warn("{}: cannot seek back to loop", path_);
      return false;
    }
    try {
      UniqueDemuxContext next = reopen_loop_();
      if (next->nb_streams != input_->nb_streams) throw input_error("the streams changed");
      input_ = next.get();
      looped_ = std::move(next);  // the pass before is done with: its packets hold their own data
      if (cut_ && cut_->cut().start) (void)seek_to_cut();
    } catch (const std::exception& e) {
      spdlog::warn("{}: cannot open again to loop: {}", path_, e.what());
      return false;
    }
  }
  loops_left_--;
  drain_pending_ = true;
  clock_.next_pass(cut_ ? cut_->cut().start : std::nullopt, cut_ ? cut_->cut().end : std::nullopt);
  if (cut_) cut_->next_pass();
  return true;
}

// ---- a cut ---------------------------------------------------------------------

void DemuxSource::cut(const Cut& c) {
  cut_.emplace(c);
  if (!c.start) return;  // a live input: the first packet read starts it (CutGate::judge)
  clock_.cut_at(*c.start, c.shift);
  (void)seek_to_cut();
}

bool DemuxSource::seek_to_cut() {
  const double start = *cut_->cut().start;
  if (start > input_origin_s(input_) && seek_before(input_, video_stream_, start)) {
    cut_->sought();  // an MPEG-TS seek can land inside a GOP
    return true;
  }
  return seek_to_start();  // decoded from the start: exact, only slower
}

bool DemuxSource::copies_streams() const {
  for (unsigned i = 0; i < input_->nb_streams; ++i)
    if (static_cast<int>(i) != video_stream_ && copies_.copied(static_cast<int>(i))) return true;
  return false;
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
    switch (cut_->judge(p.pkt.get(), *input_, index, video_stream_, clock_)) {
      case CutGate::Verdict::kDrop:
        return Flow::kContinue;
      case CutGate::Verdict::kVideoPastEnd:  // the copied streams go on a second past the end
        if (copies_streams()) return Flow::kContinue;
        return rewind() ? Flow::kContinue : Flow::kStop;
      case CutGate::Verdict::kPassOver:
        return rewind() ? Flow::kContinue : Flow::kStop;
      case CutGate::Verdict::kKeep:
        break;
    }
  }
  if (known) clock_.retime(p.pkt.get(), *input_);
  const std::int64_t ts = p.pkt->dts != AV_NOPTS_VALUE ? p.pkt->dts : p.pkt->pts;
  if (realtime_ && ts != AV_NOPTS_VALUE && known) pace(ts, index);
  p.origin = Clock::now();
  counters_.packets_read++;
  if (index == video_stream_) {
    if (cut_) p.window = cut_->window(input_->streams[video_stream_]->time_base, clock_.offset_s());
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
