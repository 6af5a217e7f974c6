// Segment-parallel decode of one stream (issue #21): the packets are cut at
// keyframes into segments (GOPs) that K decoder sessions decode at the same
// time; the frames come out in presentation order with their own timestamps,
// as one decoder would give them.
//
// An open GOP (pictures after its keyframe in decode order that are shown
// before it, and reference the previous GOP) is decoded with the previous
// segment's packets in front, and only its own pictures are kept.
//
// A session decodes its segments one after another without a flush: FFmpeg
// sets a decoder up again after avcodec_flush_buffers (for NVDEC a new
// hardware decoder), which can cost more than a 30-frame GOP's decode. Frames
// are told apart by their timestamps, and a segment is complete when each of
// its pictures has come out once, in order (a closed GOP's keyframe pushes the
// previous one's out). A segment that did not come out so (a decoder that lost
// or reordered pictures across the jump from an unrelated GOP) is decoded again
// alone, which is exactly what one decoder gives. An open GOP continues a
// session only right after the GOP before it; otherwise it is decoded alone,
// after the previous GOP. A session drains and flushes (a restart, counted)
// at the end of the input, for a segment decoded alone, and where the input
// starts over; never because the output waits for a segment still in its
// decoder: the input then runs past the window until that session has a next
// segment to send (next_step). A stream whose keyframes are further apart than
// `max_segment` packets (or none at all) is decoded by one session from then
// on, and the report says so.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"

namespace vpipe {

// Whether a GOP, given the pts of its packets in decode order (the keyframe
// first), is open: a later packet is shown before the keyframe.
[[nodiscard]] bool is_open_gop(const std::vector<std::int64_t>& pts_in_decode_order);

// Segments in flight per session (the window; what a session holds in memory).
inline constexpr int kSegmentsPerSession = 3;

// --decode-sessions auto decides in two steps (issue #45: it may never make a
// run slower than one session, nor its latency more than twice one session's).
//
// 1. Before the run, what rules more sessions out (auto_decode_sessions, pure):
//    the CPU decoder (libavcodec threads it already), a live run (segments hold
//    frames: latency grows by a segment per session), a codec segment decode is
//    not tested on, NVDEC's engines half busy or more, and memory: as many as
//    the segments they hold fit in half of `memory_bytes` (the frame size and
//    the segment length set what a session holds). Its pick is the most.
// 2. Over the run's first frames, what bounds it (sessions_from_rates, pure):
//    the plain decoder (one session, as --decode-sessions 1) decodes while the
//    stages after it are timed; more sessions only when they could take the
//    frames faster than one session gives them, and the frames segments hold
//    keep latency within kLatencyBound of one session's. Widening starts at the
//    next keyframe. The encoder-bound run of issue #45 (1080p → 640x360 ffv1:
//    one session decodes ~1,200 fps, the encoder takes ~85) stays at one.
struct AutoSessionsInput {
  bool nvdec = false;
  bool live = false;  // a live input, --realtime or a network output
  AVCodecID codec = AV_CODEC_ID_NONE;
  std::size_t frame_bytes = 0;       // one decoded frame, in device memory
  std::size_t segment_frames = 120;  // the longest segment split off
  int segments_per_session = kSegmentsPerSession;
  std::optional<double> engine_load_pct;    // NVML's decoder utilisation (nullopt: unknown)
  std::optional<std::size_t> memory_bytes;  // the budget, or the device's free memory
};
struct AutoSessions {
  int sessions = 1;
  std::string why;
};
[[nodiscard]] AutoSessions auto_decode_sessions(const AutoSessionsInput& in, int most);

// What the first frames measured: one session's decode rate (frames over the
// time its worker spent decoding) and the slowest stage after it (items over
// the time it spent working, not waiting), with what a CPU encoder takes.
struct MeasuredRates {
  double decode_fps = 0;
  double downstream_fps = 0;  // 0: nothing measured after the decoder
  std::string slowest;        // that stage's name
  int encoder_threads = 0;    // a CPU encoder's threads (0: none, or a hardware encoder)
  int cores = 1;
  std::int64_t remaining_frames = 0;  // still to decode (0: not known)
  // Latency: one session's p50 demux → output so far (0: not measured), and
  // the frames more sessions would hold ahead of the output (their window:
  // segments per session × the mean segment). The hold does not shrink with
  // more sessions: the window grows as fast as the rate (N × w × GOP / N × fps).
  double latency_ms = 0;
  double hold_frames = 0;
};
// Widening costs new decoder sessions and segments in flight: on the H200 a
// 360-frame input ran 0.67x one session's whole-process rate with auto's 4
// sessions (858ec22). Fewer frames left than this: one session.
inline constexpr std::int64_t kMinFramesToWiden = 3000;
// More sessions need room downstream: the slowest stage must take frames at
// least this much faster than one session gives them.
inline constexpr double kSessionHeadroom = 1.25;
// More sessions may make p50 latency at most this many times one session's
// (issue #45); a window that holds more keeps one session.
inline constexpr double kLatencyBound = 2.0;
[[nodiscard]] AutoSessions sessions_from_rates(const MeasuredRates& r, int most);

// The stage's side of step 2: mark() when the measured span starts (after the
// first frames' start-up), decide() at its end with one session's decode rate
// and the frames a widened window would hold (see MeasuredRates).
class SessionGovernor {
 public:
  virtual ~SessionGovernor() = default;
  virtual void mark() = 0;
  [[nodiscard]] virtual AutoSessions decide(double one_session_fps, std::int64_t frames_out,
                                            double hold_frames) = 0;
};

class Pipeline;
// The governor of a transcode: it times the pipeline's stages other than the
// demuxer and the decoder (items over busy seconds, between mark and decide)
// and reads one session's p50 latency from `latency` (ns; every frame so far).
// encoder_threads: a CPU encoder's (0: none); the pipeline and `latency` must
// outlive it. expected_frames: the input's (0: not known); frames_out at
// decide() is taken off it.
[[nodiscard]] std::unique_ptr<SessionGovernor> make_pipeline_governor(const Pipeline& pipeline,
                                                                      const Histogram& latency,
                                                                      int encoder_threads, int most,
                                                                      std::int64_t expected_frames);

// One decoder session: its codec context and what its frames need (NVDEC:
// the frames context and stream, in `nvdec`). Made by the factory, per worker.
struct DecoderSession {
  std::unique_ptr<NvdecContext> nvdec;  // declared first: the context's frames hold its pool
  UniqueAVCodecContext context;
};

// Sends `pkt` to the session's decoder (nullptr: the end of the stream) and
// hands every frame that comes out to `take`. A packet the decoder refuses, a
// frame lost or one flagged corrupt counts in `errors` (decoding goes on).
void decode_packet(DecoderSession& s, const AVPacket* pkt, std::int64_t& errors,
                   const std::function<void(UniqueAVFrame)>& take);

struct SegmentDecodeStats {
  int sessions = 0;  // taking segments now (auto: after it measured)
  std::int64_t segments = 0, open_gops = 0;
  std::int64_t restarts = 0;  // a session drained and flushed (FFmpeg sets the decoder up again)
  std::string fell_back;      // why one session took over from some point on (empty: never)
  std::string measured;       // --decode-sessions auto, step 2: what it chose and why
  std::int64_t plain_frames = 0;  // decoded by the plain decoder (auto's measured span, or all)
};

class SegmentDecodeStage final : public Stage<Packet, Frame> {
 public:
  using Factory = std::function<DecoderSession()>;
  // per_session: segments in flight per session (the window; memory).
  // governor: --decode-sessions auto, step 2: `plain` (one session, as
  // --decode-sessions 1 decodes, sharing `counters`) decodes until it decided,
  // and on to the end if it keeps one; `sessions` is then the most (nullptr:
  // `sessions` from the start).
  struct Auto {
    std::unique_ptr<SessionGovernor> governor;
    std::unique_ptr<Stage<Packet, Frame>> plain;
  };
  SegmentDecodeStage(int sessions, Factory make_session, AVRational time_base,
                     std::optional<std::int64_t> limit, MediaCounters& counters,
                     std::size_t max_segment = 600, int per_session = kSegmentsPerSession,
                     Auto measure = {});
  // Whether the stream shows pictures in another order than it decodes them (B-frames:
  // codecpar->video_delay > 0). Then a GOP whose every packet has pts = dts carries the
  // decode order's times, not the display's (a raw stream remuxed with -c copy): segments
  // cannot be told open from closed, nor frames matched to them, so one session decodes.
  void reorders(bool yes) { reorders_ = yes; }
  // The measured span of step 2: from the kMarkFrames-th frame out to the kDecideFrames-th.
  static constexpr std::int64_t kMarkFrames = 30, kDecideFrames = 150;
  ~SegmentDecodeStage() override;  // stops and joins the workers
  [[nodiscard]] std::string name() const override { return "decode (segments)"; }
  Flow process(Packet packet, Output<Frame>& out) override;
  void finish(Output<Frame>& out) override;
  [[nodiscard]] SegmentDecodeStats stats() const;

 private:
  struct Segment {
    std::int64_t seq = 0;
    bool fresh = false;  // after the input started over: no decoder state carries in
    std::vector<UniqueAVPacket> prefix;   // the previous GOP, for an open GOP's leading pictures
    std::vector<UniqueAVPacket> packets;  // this GOP, the keyframe first
  };
  struct Done {
    std::vector<Frame> frames;
    std::int64_t errors = 0;
  };
  // A segment a worker has sent to its decoder whose pictures are still
  // coming out (decode order; the back is the one being sent).
  struct Pending {
    Segment seg;                      // kept, to decode it again alone if it did not come out right
    std::set<std::int64_t> own;       // its pictures' pts
    std::set<std::int64_t> received;  // of them, out so far
    bool anomalous = false;           // a picture twice, out of order, or one nobody owns
    Done done;
    [[nodiscard]] bool complete() const { return received.size() == own.size(); }
  };
  // One worker's decoder and what is still in it.
  struct Worker {
    std::optional<DecoderSession> session;
    std::deque<Pending> pending;
    bool drained = true;         // nothing carries over: flush before the next packet
    std::int64_t last_seq = -2;  // the segment sent last, while the decoder holds its state
  };
  void work(int worker);
  bool next_step(int index, Worker& w, Segment& seg, bool& have,
                 std::unique_lock<std::mutex>& lock);
  Flow govern();                                           // step 2 of auto, at its two points
  Flow through_plain(Packet packet, Output<Frame>& out);   // auto: the plain decoder's packets
  Flow through_inline(Packet packet, Output<Frame>& out);  // one session after a fallback
  Flow widen(Packet key, Output<Frame>& out);              // auto chose more: segments from `key`
  void keep_plain(const std::string& why);                 // auto stays at one session
  void end_of_segments();  // the input has ended: the workers drain what they hold
  [[nodiscard]] std::int64_t window() const { return std::int64_t{per_session_} * active_; }
  void decode_into(Worker& w, Segment seg);
  void alone(Worker& w, Pending p);  // start to end in a clean decoder, then published
  void drain(Worker& w);             // end of stream: every pending segment completes
  void route(Worker& w, const std::set<std::int64_t>& prefix, std::vector<Frame>& frames) const;
  void publish(std::int64_t seq, Done done);
  void submit(Output<Frame>& out);
  Flow emit_ready(Output<Frame>& out, bool wait_all);
  Flow emit(Frame f, Output<Frame>& out);
  Done decode(DecoderSession& s, Segment& seg) const;
  // One session from here, not by choice (the report says why).
  Flow take_over(const std::string& why, Output<Frame>& out);
  Flow decode_inline(UniqueAVPacket pkt, Output<Frame>& out);  // after a fallback

  const int sessions_;
  Factory make_session_;
  AVRational time_base_;
  std::optional<std::int64_t> limit_;
  MediaCounters& counters_;
  const std::size_t max_segment_;
  const int per_session_;
  std::unique_ptr<SessionGovernor> governor_;      // until it decided
  std::unique_ptr<Stage<Packet, Frame>> plain_;    // auto: one session, until segments take over
  std::unique_ptr<Stage<Packet, Frame>> retired_;  // the plain decoder after widening: its frames
                                                   // downstream may still use its context
  bool widen_at_key_ = false;    // auto chose more: segments from the next keyframe
  std::int64_t plain_base_ = 0;  // counters_.frames_decoded before the plain decoder
  bool reorders_ = false;
  // Whether the gathered GOP's times are the decode order's where the stream reorders.
  [[nodiscard]] bool times_in_decode_order() const;
  std::vector<UniqueAVPacket> current_, previous_;
  std::int64_t next_seq_ = 0, next_emit_ = 0, next_index_ = 0;
  bool fresh_next_ = true;                // the next segment follows a start-over (or is the first)
  std::optional<DecoderSession> inline_;  // one session, after a fallback
  bool inline_restart_ = false;           // the input started over: through_inline decides how
  std::map<std::int64_t, Clock::time_point> origin_by_pts_;
  // A cut: the window of the segment being gathered (its packets'), and of
  // each submitted segment until its frames are emitted (the stage's thread).
  FrameWindow window_;
  std::map<std::int64_t, FrameWindow> windows_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<Segment> todo_;
  std::map<std::int64_t, Done> done_;
  SegmentDecodeStats stats_;
  std::exception_ptr error_;
  bool stop_ = false;
  bool no_more_segments_ = false;
  std::int64_t starved_ = -1;  // the head segment, while its worker waits for a next one
  int active_ = 1;             // workers that take segments (the others wait)
  // One session's decode while auto measures (the plain decoder's, from the
  // span's start): frames out, seconds in its process(), packets and keyframes.
  std::int64_t probe_frames_ = 0, probe_packets_ = 0, probe_keys_ = 0;
  std::int64_t first_key_at_ = 0, last_key_at_ = 0;  // the span's first and last keyframe (packets)
  double probe_decode_s_ = 0;
  std::int64_t marked_at_ = -1;       // frames out when the governor's span started
  std::vector<std::thread> workers_;  // last: they go first
};

}  // namespace vpipe
