// The FFmpeg stages of a transcode after the demuxer (demux.hpp): decode, encode, mux, null.
//
//  demux ──video packets──► decode ──frames──► filter … ──► encode ──packets──► mux
//    └──────────── audio / other packets, copied untouched ──────────────────────┘
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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
#include "vpipe/pipeline/graph/thread_waker.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/media_counters.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"
#include "vpipe/pipeline/io/packet.hpp"

namespace vpipe {

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

// When each packet left the demuxer, by pts, until its frame comes out of a
// decoder (latency from the demuxer); bounded.
void remember(std::map<std::int64_t, Clock::time_point>& m, std::int64_t pts, Clock::time_point t);
Clock::time_point recall(std::map<std::int64_t, Clock::time_point>& m, std::int64_t pts);

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
