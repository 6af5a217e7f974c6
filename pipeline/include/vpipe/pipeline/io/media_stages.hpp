// The FFmpeg stages of a transcode, and the filter stage.
//
//  demux ──video packets──► decode ──frames──► filter … ──► encode ──packets──► mux
//    └──────────── audio / other packets, copied untouched ──────────────────────┘
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "vpipe/memory/histogram.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/phase_clock.hpp"
#include "vpipe/pipeline/graph/stage.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/media_counters.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"
#include "vpipe/pipeline/io/packet.hpp"

namespace vpipe {

class StreamReencoder;

// The input started over and `next` is the new pass's first packet: whether a
// decoder that took the pass before (its frames cut to `window`) goes straight
// on instead of draining and flushing. An H.264 or HEVC pass that starts on an
// IDR, with the same cut window, does, as at any IDR mid-stream: nothing after it
// refers to a picture before it, and the pictures held back come out first. A
// flush is dear: FFmpeg's H.264 flush sets its decoder up again, with NVDEC a new
// hardware decoder each pass (its surfaces allocated under the driver's lock:
// --streams of a short looped clip serialized on it); a cuvid decoder's flush
// makes NVIDIA's parser and decoder anew; and every drain empties the decoder's
// pipeline. Every plain decode asks this.
[[nodiscard]] bool goes_straight_on(const AVCodecContext& decoder, const Packet& next,
                                    const FrameWindow& window);

// A stage's thread, while it runs, so that Ctrl-C can break a read or a write
// blocked in the kernel (a FIFO or pipe whose other end went quiet, a stalled
// disk): wake() sends it SIGURG, for which the program installs a handler
// without SA_RESTART, so the call returns EINTR and the FFmpeg I/O context's
// interrupt callback ends it. Safe from any thread; does nothing when no
// handler is installed (SIGURG would be ignored, breaking nothing).
class ThreadWaker {
 public:
  void enter();           // on the stage's thread (Stage::open)
  void leave() noexcept;  // Stage::close: the thread is never signalled again
  void wake() noexcept;

 private:
  std::mutex mutex_;
  std::optional<pthread_t> thread_;
};

// When each packet left the demuxer, by pts, until its frame comes out of a
// decoder (latency from the demuxer); bounded.
void remember(std::map<std::int64_t, Clock::time_point>& m, std::int64_t pts, Clock::time_point t);
Clock::time_point recall(std::map<std::int64_t, Clock::time_point>& m, std::int64_t pts);

// Reads packets: the video stream's go downstream, mapped streams' straight
// to each output's muxer queue (copy_to; this stage closes them when done).
class DemuxSource final : public Source<Packet> {
 public:
  // realtime: release packets no faster than their timestamps (a file rehearsing a live feed).
  DemuxSource(AVFormatContext* input, std::string path, int video_stream, MediaCounters& counters,
              bool realtime = false);
  // With a frame limit: copied packets from this time (seconds) on are
  // dropped, so audio ends with the video, whatever the demuxer read ahead.
  void copy_until(double seconds) { copy_until_s_ = seconds; }
  // An output the copied streams go to (one decode, any number of outputs): input stream →
  // its output stream (-1: not copied), its muxer's queue, and input stream → the
  // re-encoder its packets go through first (reencode.hpp; null: copied as they are).
  // Re-encoders are flushed at the end; the packets one could not take count as damaged.
  void copy_to(std::vector<int> output_index, QueuePtr<Packet> copy_out,
               std::vector<StreamReencoder*> reencoders);
  // A cut (cut.hpp), resolved: seeks before its start (where it has one and
  // the input is a file), shifts the timestamps, marks the video packets with
  // the frames to keep, drops copied packets outside it, and ends each pass
  // once the video has passed its end (a --loop repeats the span).
  void cut(const Cut& c);
  // Without a cut: the output's clock starts at zero where the input's starts at `origin_s`
  // (its start_time, output_clock_shift_s): every timestamp minus it.
  void start_clock_at(double origin_s) {
    start_s_ = origin_s;
    offset_s_ = -origin_s;
  }
  // Packets read before the pipeline ran (a pipe's, for its first frame: FirstFrame), sent on
  // before any read from the input, as if read then.
  void send_first(std::vector<UniqueAVPacket> packets) {
    for (auto& p : packets) first_.push_back(std::move(p));
  }
  // Read the input `times` times over (seek back at the end), timestamps
  // continuing: a long run from a short clip (benchmarks, soaks).
  // Each start-over drains the decoder and seeks back to the start (by byte
  // for MPEG-TS/PS and raw streams, by time for indexed containers), or,
  // where the seek fails, opens the input afresh with `reopen`.
  void loop(int times, std::function<UniqueDemuxContext()> reopen = {}) {
    loops_left_ = times - 1;
    reopen_loop_ = std::move(reopen);
  }
  // Live input: every read is watched (stall timeout, Ctrl-C). A stalled or
  // failed read ends the input, unless `reopen` is given: then the input is
  // opened again up to `attempts` times, as long as it brings the same video
  // stream, timestamps continuing from where the last connection stopped.
  void watch(InputWatch* w) { watch_ = w; }
  // Ctrl-C (non-zero): a packet read short because the read was interrupted
  // is not damage in the input: it is dropped, and the input ends there.
  void interrupt(const std::atomic<int>* flag) { interrupt_ = flag; }
  void reconnect(int attempts, std::function<UniqueDemuxContext()> reopen) {
    reconnects_left_ = attempts;
    reopen_ = std::move(reopen);
  }
  [[nodiscard]] std::string name() const override { return "demux"; }
  Flow produce(Output<Packet>& out) override;
  void finish(Output<Packet>& out) override;
  void open() override { waker_.enter(); }
  void close() noexcept override;
  // Ctrl-C while a read blocks in the kernel (ThreadWaker).
  void wake() noexcept { waker_.wake(); }

 private:
  ThreadWaker waker_;
  AVFormatContext* input_;
  std::string path_;
  int video_stream_;
  // Where copied packets go: per output, input stream → output stream (-1:
  // dropped), its muxer's queue, and the re-encoder of each stream (null: copied).
  struct CopyTarget {
    std::vector<int> output_index;
    QueuePtr<Packet> out;
    std::vector<StreamReencoder*> reencoders;
  };
  std::vector<CopyTarget> targets_;
  // Per input stream, the packets its re-encoders could not take, counted once: the most
  // of any output's (each output's re-encoder sees the same packets).
  std::vector<std::int64_t> reencode_errors_;
  bool copy_closed_ = false;
  MediaCounters& counters_;
  bool realtime_;
  std::optional<double> copy_until_s_;
  std::optional<double> first_ts_;  // seconds, of the first timed packet
  Clock::time_point start_{};
  bool rewind();
  bool seek_to_start();
  enum class CutVerdict { kKeep, kDrop, kPassOver };
  CutVerdict apply_cut(AVPacket* pkt, int index);
  bool clip_cue(AVPacket* pkt, AVRational tb) const;
  bool seek_to_cut();                        // the keyframe before the cut's start, or the start
  [[nodiscard]] FrameWindow window() const;  // the cut, as this pass's video timestamps
  std::optional<Cut> cut_;
  void send_copied(Packet p, int index);  // to each muxer, through its re-encoder if it has one
  void send_copied(CopyTarget& t, Packet p, int index);
  void reencoded(CopyTarget& t, int index, std::vector<UniqueAVPacket> packets,
                 Clock::time_point origin);
  [[nodiscard]] bool copied(int index) const;  // whether any output takes stream `index`
  void flush_reencoders();
  bool to_keyframe_ = false;     // after a cut's seek: video packets before a keyframe are dropped
  bool video_past_end_ = false;  // this pass's video has passed the cut's end
  bool copies_streams() const;
  bool reopen(const std::string& why);
  std::optional<Flow> read(AVPacket* pkt);
  void retime(AVPacket* pkt);
  void pace(std::int64_t ts, int index);
  InputWatch* watch_ = nullptr;
  const std::atomic<int>* interrupt_ = nullptr;
  int reconnects_left_ = 0;
  std::function<UniqueDemuxContext()> reopen_;
  std::vector<UniqueDemuxContext> reopened_;  // kept to the end: streams' pointers stay valid
  bool resync_ = false;                       // next timed packet continues the output's time
  double out_end_s_ = 0;                      // latest end time written, output seconds
  int loops_left_ = 0;
  std::function<UniqueDemuxContext()> reopen_loop_;
  UniqueDemuxContext looped_;         // this pass's input, when the loop reopens it
  bool drain_pending_ = false;        // rewound: tell the decoder before the next packet
  std::deque<UniqueAVPacket> first_;  // send_first's, not yet sent
  double offset_s_ = 0;               // added to every timestamp of this pass
  double pass_end_s_ = 0;             // latest end time seen, source seconds
  std::optional<double> start_s_;     // earliest time seen
  // Per stream, output seconds: the last packet's time and the one before it,
  // and whether the last one was off the line (held: shifted on its own).
  struct DtsTrack {
    std::optional<double> last, before;
    bool held = false;
  };
  std::map<int, DtsTrack> last_dts_s_;
  [[nodiscard]] double close_up(int index, double out_t, double step);
  void drop_damaged_pts(AVPacket* pkt);
  [[nodiscard]] bool pts_fits(const AVPacket* pkt) const;  // after its DTS, within a reorder
};

// --max-in-flight: at most `limit` frames between the decoder and the end of
// the pipeline. Each frame carries a ticket; the ticket returns when the last
// frame holding it is destroyed (encoded, written, or dropped by a queue).
// At the limit the decoder waits (block) or drops the new frame (drop-oldest,
// drop-newest: the frames already in flight cannot be recalled), counted.
class FlightLimit {
 public:
  FlightLimit(std::size_t limit, bool drop) : limit_(limit), drop_(drop) {}
  // A ticket; null when dropping (the caller drops the frame) or when
  // `give_up` says the pipeline is stopping while it waits.
  std::shared_ptr<void> acquire(const std::function<bool()>& give_up);
  [[nodiscard]] std::size_t limit() const { return limit_; }
  [[nodiscard]] std::size_t high_water() const;
  [[nodiscard]] std::int64_t dropped() const;
  [[nodiscard]] double waited_s() const;

 private:
  void release();
  const std::size_t limit_;
  const bool drop_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::size_t in_flight_ = 0, high_water_ = 0;
  std::int64_t dropped_ = 0;
  double waited_s_ = 0;
};

// Decode: CPU (FFmpeg's threads; host frames) or, with `nvdec` attached to
// the decoder, NVDEC (device frames). Damaged packets are counted and skipped.
class DecodeStage final : public Stage<Packet, Frame> {
 public:
  DecodeStage(UniqueAVCodecContext decoder, AVRational time_base, std::optional<std::int64_t> limit,
              MediaCounters& counters, const NvdecContext* nvdec = nullptr);
  [[nodiscard]] std::string name() const override { return "decode"; }
  Flow process(Packet packet, Output<Frame>& out) override;
  void finish(Output<Frame>& out) override;
  void limit_in_flight(FlightLimit* limit) { flight_ = limit; }
  // send: avcodec_send_packet (with NVDEC: the decode, map, copy and unmap);
  // receive: avcodec_receive_frame; copy: vpipe's copy out of FFmpeg's frame (as_frame).
  [[nodiscard]] std::vector<Phase> phases() const override { return clock_.phases(); }

 private:
  enum PhaseIndex : std::size_t { kSend, kReceive, kCopy };
  PhaseClock<3> clock_{{"send", "receive", "copy"}};
  FlightLimit* flight_ = nullptr;
  FrameWindow window_;            // the latest packet's: the frames it belongs with
  bool restart_ = false;          // the input started over: restart() at the next packet
  int send(const AVPacket* pkt);  // avcodec_send_packet, timed
  // The decoded frame as vpipe's: wrapped (host), copied out of NVDEC's surface, or as it is.
  [[nodiscard]] Frame as_frame(UniqueAVFrame av) const;
  Flow receive(Output<Frame>& out);
  Flow restart(const Packet& next, Output<Frame>& out);
  void check_nvdec() const;
  UniqueAVCodecContext decoder_;
  AVRational time_base_;
  std::optional<std::int64_t> limit_;
  MediaCounters& counters_;
  const NvdecContext* nvdec_;
  std::map<std::int64_t, Clock::time_point> origin_by_pts_;
  std::int64_t next_index_ = 0;
};

// Runs one configured filter on every frame.
class FilterStage final : public Stage<Frame, Frame> {
 public:
  explicit FilterStage(ConfiguredFilter filter) : f_(std::move(filter)) {}
  [[nodiscard]] std::string name() const override { return "filter:" + f_.label; }
  Flow process(Frame in, Output<Frame>& out) override;

 private:
  ConfiguredFilter f_;
};

// The end of a run that writes nothing (`-o null`): counts frames, records
// their latency, and for device frames waits until they are computed.
class NullSink final : public Sink<Frame> {
 public:
  explicit NullSink(MediaCounters& counters, std::function<void(const Frame&)> tap = {})
      : counters_(counters), tap_(std::move(tap)) {}
  [[nodiscard]] std::string name() const override { return "null"; }
  Flow consume(Frame frame) override;
  void read_stamps(bool on) { read_stamps_ = on; }

 private:
  MediaCounters& counters_;
  bool read_stamps_ = false;
  std::function<void(const Frame&)> tap_;
};

// A damaged input's frame times, made usable (issue #40): strictly increasing,
// and no leap ahead past `max_gap` ticks. A time that goes back or leaps ahead
// is not trusted: the frame takes the last time plus one frame (`step`), and
// later frames follow from there at their own spacing. So one bad time costs
// one frame's timing, never the file's (a 13-hour file, or every later frame
// squeezed into a tick). A frame without a time (a raw .h264) is one step on.
class TimestampRepair {
 public:
  TimestampRepair(std::int64_t step, std::int64_t max_gap) : step_(step), max_gap_(max_gap) {}
  struct Time {
    std::int64_t pts;
    bool repaired;  // the input's time was not trusted
  };
  [[nodiscard]] Time next(std::int64_t pts);

 private:
  std::int64_t step_;
  std::int64_t max_gap_;
  std::int64_t offset_ = 0;  // added to the input's times since the last repair
  std::int64_t last_ = AV_NOPTS_VALUE;
};

// What every encode stage does to a frame before its encoder: waits for a
// download still landing, scales a frame whose size changed mid-stream to the
// size the encoder was opened for (nothing in the chain fixed it; counted),
// reads its stamp when asked, and sets av->pts to a strictly increasing time
// in the encoder's time base (TimestampRepair).
class EncoderInput {
 public:
  EncoderInput(const AVCodecContext* encoder, MediaCounters& counters)
      : encoder_(encoder), counters_(counters) {}
  [[nodiscard]] Frame prepare(Frame frame, bool read_stamps);
  // A keyframe on the first frame at or after each multiple of `seconds` from
  // the first frame (HLS's rule for where a segment may end), so renditions of
  // the same frames have their keyframes, and their segments, at the same times.
  void force_keyframes(double seconds) { key_step_us_ = std::llround(seconds * 1e6); }

 private:
  [[nodiscard]] std::int64_t monotonic_pts(const Frame& frame);
  void mark_keyframe(AVFrame* av);
  std::int64_t key_step_us_ = 0;
  std::optional<std::int64_t> key_origin_;  // the first frame's pts
  std::int64_t next_key_ = 1;               // the multiple of key_step_us_ to force next
  const AVCodecContext* encoder_;
  MediaCounters& counters_;
  UniqueSwsContext fit_;
  FrameFormat fit_from_;
  std::optional<TimestampRepair> times_;  // in the encoder's time base, made at the first frame
};

class EncodeStage final : public Stage<Frame, Packet> {
 public:
  EncodeStage(AVCodecContext* encoder, int out_stream, MediaCounters& counters);
  [[nodiscard]] std::string name() const override { return "encode"; }
  Flow process(Frame frame, Output<Packet>& out) override;
  void finish(Output<Packet>& out) override;
  void read_stamps(bool on) { read_stamps_ = on; }
  void force_keyframes(double seconds) { input_.force_keyframes(seconds); }

 private:
  bool read_stamps_ = false;
  void drain(Output<Packet>& out);
  AVCodecContext* encoder_;
  int out_stream_;
  MediaCounters& counters_;
  EncoderInput input_;
  std::map<std::int64_t, Clock::time_point> origin_by_pts_;
};

// Writes packets, interleaved, and the trailer at end-of-stream.
class MuxSink final : public Sink<Packet> {
 public:
  MuxSink(AVFormatContext* output, std::string path, std::vector<AVRational> source_time_base,
          int video_stream, MediaCounters& counters);
  [[nodiscard]] std::string name() const override { return "mux"; }
  Flow consume(Packet packet) override;
  void finish() override;
  void open() override { waker_.enter(); }
  void close() noexcept override { waker_.leave(); }
  // Ctrl-C while a write blocks in the kernel (ThreadWaker). Only an output
  // whose interrupt callback says so stops there: a stream no one reads (a
  // FIFO, a pipe, a URL). A file is finalized.
  void wake() noexcept { waker_.wake(); }
  // Writing stopped at a Ctrl-C (the output's interrupt callback): the rest,
  // the trailer included, is not written.
  [[nodiscard]] bool cut() const { return cut_; }
  // A file the muxer opened itself that failed (a segment on a full disk)
  // fails the output at the next packet, or at the trailer (MuxerFiles).
  void check_files(const MuxerFiles* files) { files_ = files; }

 private:
  ThreadWaker waker_;
  bool cut_ = false;
  AVFormatContext* output_;
  std::string path_;
  std::vector<AVRational> source_time_base_;
  int video_stream_;
  MediaCounters& counters_;
  const MuxerFiles* files_ = nullptr;
  std::vector<std::int64_t> last_dts_;  // per output stream, in its time base
  std::vector<int> leaps_;              // per output stream: packets dropped in a row for a leap
  [[nodiscard]] bool damaged(const AVPacket* pkt);
  Flow stop_writing();
};

}  // namespace vpipe
