// The streams a demuxer copies beside the video (audio, subtitles, data): each to every
// output's muxer queue that takes it, through that output's re-encoder for the stream where it
// has one (reencode.hpp). One demux, any number of outputs; the first output gets the packet,
// the others references to it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vpipe/pipeline/graph/stage.hpp"
#include "vpipe/pipeline/io/media_counters.hpp"
#include "vpipe/pipeline/io/packet.hpp"

namespace vpipe {

class StreamReencoder;

class CopyFanOut {
 public:
  CopyFanOut(std::string path, MediaCounters& counters);
  // An output: input stream → its output stream (-1: not copied), its muxer's queue (this
  // fan-out is one of its producers and closes it when done), and input stream → the
  // re-encoder its packets go through first (null: copied as they are).
  void add(std::vector<int> output_index, QueuePtr<Packet> out,
           std::vector<StreamReencoder*> reencoders);
  [[nodiscard]] bool copied(int index) const;      // whether any output takes stream `index`
  void send(Packet p, int index);                  // to each output that takes stream `index`
  void remap(bool same_layout, unsigned streams);  // a live input reconnected
  // The end of the input: what each re-encoder holds (its resampler, its encoder's delay)
  // goes to the muxer, then every queue closes. Re-encoded packets an encoder could not take
  // are counted as damaged.
  void finish();
  void close() noexcept;  // the queues, where finish() did not

 private:
  struct Target {
    std::vector<int> output_index;
    QueuePtr<Packet> out;
    std::vector<StreamReencoder*> reencoders;
  };
  void send(Target& t, Packet p, int index);
  void reencoded(Target& t, int index, std::vector<UniqueAVPacket> packets,
                 Clock::time_point origin);
  void flush_reencoders();

  std::string path_;
  MediaCounters& counters_;
  std::vector<Target> targets_;
  // Per input stream, the packets its re-encoders could not take, counted once: the most
  // of any output's (each output's re-encoder sees the same packets).
  std::vector<std::int64_t> reencode_errors_;
  bool closed_ = false;
};

}  // namespace vpipe
