// The output's clock of a demuxer's packets: every timestamp shifted so that the output's
// keep increasing across the passes of a --loop, a cut that starts the output at zero, the
// connections of a live input, and MPEG-TS discontinuities (closed up); and damaged times
// (a presentation time that cannot be one) dropped, for the decoder and encoder to repair.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/media_counters.hpp"

namespace vpipe {

class DemuxClock {
 public:
  DemuxClock(std::string path, MediaCounters& counters);
  // The output's zero is the input's `origin_s` (its start time, no cut).
  void start_at(double origin_s);
  // A cut starts at `start_s` (input seconds); with `shift` the output's zero is there.
  void cut_at(double start_s, bool shift);
  // The input starts over (--loop): the next pass follows this one.
  void next_pass(std::optional<double> cut_start, std::optional<double> cut_end);
  // A live input's new connection: the next timed packet carries on from the output's time.
  void reconnected();
  // One packet, in its stream's time base: shifted onto the output's clock.
  void retime(AVPacket* pkt, const AVFormatContext& input);
  [[nodiscard]] double offset_s() const { return offset_s_; }  // added to this pass's times

 private:
  [[nodiscard]] double close_up(int index, double out_t, double step);
  void drop_damaged_pts(AVPacket* pkt, const AVFormatContext& input);
  // After its DTS, within a reorder.
  [[nodiscard]] static bool pts_fits(const AVPacket* pkt, const AVFormatContext& input);

  std::string path_;
  MediaCounters& counters_;
  bool resync_ = false;            // the next timed packet continues the output's time
  double out_end_s_ = 0;           // latest end time written, output seconds
  double offset_s_ = 0;            // added to every timestamp of this pass
  double pass_end_s_ = 0;          // latest end time seen, source seconds
  std::optional<double> start_s_;  // earliest time seen
  // Per stream, output seconds: the last packet's time and the one before it,
  // and whether the last one was off the line (held: shifted on its own).
  struct DtsTrack {
    std::optional<double> last, before;
    bool held = false;
  };
  std::map<int, DtsTrack> last_dts_s_;
};

}  // namespace vpipe
