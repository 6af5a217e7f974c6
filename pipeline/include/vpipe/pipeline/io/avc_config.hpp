// H.264's decoder configuration record (ISO/IEC 14496-15 avcC: the header MP4, MOV and
// Matroska keep the parameter sets in) and the few facts a smart cut reads from it: which
// sequence and picture parameter set ids a stream uses, whether a packet starts an IDR
// picture, and one record holding the sets of several encodes at once, so that pieces coded
// with different settings (their ids kept apart) play as one stream. FFmpeg's own avcC
// reader and writer are internal to it (libavformat/avc.c); this is the public part a
// smart cut needs, about a hundred lines.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vpipe {

using Bytes = std::vector<std::uint8_t>;

struct AvcConfig {
  std::uint8_t profile = 0, compatibility = 0, level = 0;
  int length_size = 4;          // bytes of each NAL unit's length in a packet
  std::vector<Bytes> sps, pps;  // the NAL units, header byte included
  Bytes trailer;                // what follows the sets (high profiles: chroma format, depths)
};

// The record in `extradata`; nullopt when it is none (Annex B start codes, or too short).
// A record that says more than it holds is an input_error naming `what`.
[[nodiscard]] std::optional<AvcConfig> parse_avc_config(std::span<const std::uint8_t> extradata,
                                                        const std::string& what);
[[nodiscard]] Bytes write_avc_config(const AvcConfig& c);

// Whether a sequence parameter set codes frames only (frame_mbs_only_flag): false for field
// or MBAFF coding, whatever the container says of the field order.
[[nodiscard]] bool sps_frames_only(const Bytes& sps);

// The id a parameter set declares (seq_parameter_set_id / pic_parameter_set_id).
[[nodiscard]] int sps_id(const Bytes& nal);
[[nodiscard]] int pps_id(const Bytes& nal);

// `base` with every set of `others` added; an id any two of them share with different
// bytes is an input_error (the decoder would take one for the other).
[[nodiscard]] AvcConfig merge_avc_configs(AvcConfig base, const std::vector<AvcConfig>& others);

// True when the packet (length-prefixed NAL units) holds a slice of an IDR picture: a
// place decoding can start from with nothing before it.
[[nodiscard]] bool starts_idr(std::span<const std::uint8_t> packet, int length_size);

}  // namespace vpipe
