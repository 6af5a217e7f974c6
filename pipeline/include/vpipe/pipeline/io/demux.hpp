// The demuxer of a transcode: reads the input's packets, sends the video's down the pipeline
// and copies the other streams to every output (CopyFanOut), each timestamp on the output's
// clock (DemuxClock); a cut, a --loop, a live input's reconnects and --realtime pacing.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/stage.hpp"
#include "vpipe/pipeline/graph/thread_waker.hpp"
#include "vpipe/pipeline/io/copy_fan_out.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/cut_gate.hpp"
#include "vpipe/pipeline/io/demux_clock.hpp"
#include "vpipe/pipeline/io/media_counters.hpp"
#include "vpipe/pipeline/io/packet.hpp"

namespace vpipe {

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
               std::vector<StreamReencoder*> reencoders) {
    copies_.add(std::move(output_index), std::move(copy_out), std::move(reencoders));
  }
  // A cut (cut.hpp), resolved: seeks before its start (where it has one and
  // the input is a file), shifts the timestamps, marks the video packets with
  // the frames to keep, drops copied packets outside it, and ends each pass
  // once the video has passed its end (a --loop repeats the span).
  void cut(const Cut& c);
  // Without a cut: the output's clock starts at zero where the input's starts at `origin_s`
  // (its start_time, output_clock_shift_s): every timestamp minus it.
  void start_clock_at(double origin_s) { clock_.start_at(origin_s); }
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
  MediaCounters& counters_;
  CopyFanOut copies_;  // the streams copied beside the video, to every output
  DemuxClock clock_;   // the output's timestamps
  bool realtime_;
  std::optional<double> copy_until_s_;
  std::optional<double> first_ts_;  // seconds, of the first timed packet
  Clock::time_point start_{};
  bool rewind();
  bool seek_to_start();
  bool seek_to_cut();  // the keyframe before the cut's start, or the start
  std::optional<CutGate> cut_;
  bool copies_streams() const;
  bool reopen(const std::string& why);
  std::optional<Flow> read(AVPacket* pkt);
  void pace(std::int64_t ts, int index);
  InputWatch* watch_ = nullptr;
  const std::atomic<int>* interrupt_ = nullptr;
  int reconnects_left_ = 0;
  std::function<UniqueDemuxContext()> reopen_;
  std::vector<UniqueDemuxContext> reopened_;  // kept to the end: streams' pointers stay valid
  int loops_left_ = 0;
  std::function<UniqueDemuxContext()> reopen_loop_;
  UniqueDemuxContext looped_;         // this pass's input, when the loop reopens it
  bool drain_pending_ = false;        // rewound: tell the decoder before the next packet
  std::deque<UniqueAVPacket> first_;  // send_first's, not yet sent
};

}  // namespace vpipe
