// What the stages of a run count while it runs (read by progress, reports and the live view).
#pragma once

#include <atomic>
#include <cstdint>

#include "vpipe/memory/histogram.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/stage.hpp"

namespace vpipe {

// Counters the stages update while running (read by progress and reports).
struct MediaCounters {
  std::atomic<std::int64_t> packets_read{0};
  std::atomic<std::int64_t> frames_decoded{0};
  std::atomic<std::int64_t> frames_cut{0};  // decoded, shown outside the cut: dropped
  std::atomic<std::int64_t> decode_errors{0};
  std::atomic<std::int64_t> frames_encoded{0};
  std::atomic<std::int64_t> encoder_dropped{0};  // packets of no bytes: a player repeats the last
  std::atomic<std::int64_t> frames_fitted{0};    // scaled to the encoder's size (size changed)
  std::atomic<std::int64_t> ts_discontinuities{0};  // timestamp jumps closed up (MPEG-TS)
  // Times not trusted: a frame's that went back or leapt (moved on), a packet's
  // PTS far from its DTS (dropped).
  std::atomic<std::int64_t> timestamps_repaired{0};
  std::atomic<std::int64_t> packets_damaged{0};  // copied packets the muxer refused: dropped
  std::atomic<std::int64_t> video_packets_written{0};
  std::atomic<std::int64_t> other_packets_written{0};
  // Steady state: frames written after the first kWarmUpFrames (decoder, encoder and
  // CUDA set-up), over the time from that frame to the last: the rate without start-up.
  static constexpr std::int64_t kWarmUpFrames = 30;
  std::atomic<std::int64_t> warm_ns{0}, last_written_ns{0};  // steady clock
  // One video frame or packet written: its latency (demux → now), the count, the clocks.
  void count_written(Clock::time_point origin);
  [[nodiscard]] double steady_fps() const;   // 0 for a run of kWarmUpFrames or fewer
  std::atomic<std::int64_t> stalls{0};       // live input: reads that waited past the stall timeout
  std::atomic<std::int64_t> reconnects{0};   // live input: connections opened again
  std::atomic<std::int64_t> disconnects{0};  // live input: ended by a read error (the sender left)
  Histogram latency_ns;
  Histogram glass_ns;         // --read-stamps: stamp in the picture → encoder input
  Histogram glass_steady_ns;  // the same, from 2 s after the first stamp on
  std::atomic<std::int64_t> stamps_read{0}, stamps_missing{0};
  std::atomic<std::int64_t> first_stamp_ns{
      0};  // steady clock, when the first stamp was read  // demux → mux, per video packet
};

// --read-stamps: the glass-to-glass age of a host frame's stamp, counted.
void record_stamp(const Frame& frame, MediaCounters& counters);

// One packet out of `encoder`, counted; a packet of no bytes is a frame its rate control dropped
// (libtheora below the bit rate a picture needs): a player repeats the frame before. Those are
// counted apart and said once.
void count_encoded(const AVPacket& pkt, const AVCodecContext& encoder, MediaCounters& counters);

}  // namespace vpipe
