#include "vpipe/pipeline/io/avc_config.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "vpipe/base/errors.hpp"

namespace vpipe {

namespace {

constexpr int kNalIdr = 5;

// Reads the bits of a NAL unit's payload (its emulation prevention bytes taken out).
class BitReader {
 public:
  BitReader(const Bytes& nal, std::size_t from) {
    int zeros = 0;
    for (std::size_t i = from; i < nal.size(); ++i) {
      if (zeros >= 2 && nal[i] == 3) {
        zeros = 0;
        continue;
      }
      zeros = nal[i] == 0 ? zeros + 1 : 0;
      rbsp_.push_back(nal[i]);
    }
  }
  int bit() {
    if (at_ >= rbsp_.size() * 8) throw input_error("a parameter set ends inside its id");
    const int b = (rbsp_[at_ / 8] >> (7 - at_ % 8)) & 1;
    ++at_;
    return b;
  }
  int signed_golomb() {  // se(v)
    const int k = exp_golomb();
    return k % 2 ? (k + 1) / 2 : -(k / 2);
  }
  int exp_golomb() {  // ue(v)
    int zeros = 0;
    while (bit() == 0)
      if (++zeros > 31) throw input_error("a parameter set's id is not an Exp-Golomb code");
    std::uint32_t v = 1;
    for (int k = 0; k < zeros; ++k) v = (v << 1) | static_cast<std::uint32_t>(bit());
    return static_cast<int>(v - 1);
  }

 private:
  Bytes rbsp_;
  std::size_t at_ = 0;
};

// Reads `count` sets, each a 16-bit length and its bytes.
std::size_t read_sets(std::span<const std::uint8_t> d, std::size_t at, int count,
                      std::vector<Bytes>& sets, const std::string& what) {
  for (int k = 0; k < count; ++k) {
    if (at + 2 > d.size()) throw input_error(fmt::format("{}: its avcC header is cut short", what));
    const std::size_t n = (std::size_t{d[at]} << 8) | d[at + 1];
    at += 2;
    if (at + n > d.size() || n == 0)
      throw input_error(fmt::format("{}: its avcC header is cut short", what));
    sets.emplace_back(d.begin() + static_cast<std::ptrdiff_t>(at),
                      d.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return at;
}

void write_sets(Bytes& out, const std::vector<Bytes>& sets) {
  for (const Bytes& s : sets) {
    out.push_back(static_cast<std::uint8_t>(s.size() >> 8));
    out.push_back(static_cast<std::uint8_t>(s.size() & 0xff));
    out.insert(out.end(), s.begin(), s.end());
  }
}

// Adds `sets` to `into`, each id once: the same id with other bytes is refused.
void add_sets(std::vector<Bytes>& into, const std::vector<Bytes>& sets, int (*id)(const Bytes&),
              const char* kind) {
  for (const Bytes& s : sets) {
    const auto same_id = std::find_if(into.begin(), into.end(),
                                      [&](const Bytes& have) { return id(have) == id(s); });
    if (same_id == into.end())
      into.push_back(s);
    else if (*same_id != s)
      throw input_error(fmt::format(
          "two {} parameter sets share id {} with different contents: they cannot be one "
          "stream's",
          kind, id(s)));
  }
}

}  // namespace

std::optional<AvcConfig> parse_avc_config(std::span<const std::uint8_t> d,
                                          const std::string& what) {
  if (d.size() < 7 || d[0] != 1) return std::nullopt;  // Annex B, or nothing
  AvcConfig c;
  c.profile = d[1];
  c.compatibility = d[2];
  c.level = d[3];
  c.length_size = (d[4] & 3) + 1;
  std::size_t at = read_sets(d, 6, d[5] & 0x1f, c.sps, what);
  if (at >= d.size()) throw input_error(fmt::format("{}: its avcC header is cut short", what));
  const int pps = d[at++];
  at = read_sets(d, at, pps, c.pps, what);
  c.trailer.assign(d.begin() + static_cast<std::ptrdiff_t>(at), d.end());
  return c;
}

Bytes write_avc_config(const AvcConfig& c) {
  if (c.sps.size() > 31 || c.pps.size() > 255)
    throw input_error(
        fmt::format("{} sequence and {} picture parameter sets: an avcC holds "
                    "at most 31 and 255",
                    c.sps.size(), c.pps.size()));
  Bytes out = {1,
               c.profile,
               c.compatibility,
               c.level,
               static_cast<std::uint8_t>(0xfc | (c.length_size - 1)),
               static_cast<std::uint8_t>(0xe0 | c.sps.size())};
  write_sets(out, c.sps);
  out.push_back(static_cast<std::uint8_t>(c.pps.size()));
  write_sets(out, c.pps);
  out.insert(out.end(), c.trailer.begin(), c.trailer.end());
  return out;
}

int sps_id(const Bytes& nal) {
  BitReader r(nal, 4);  // after the NAL header, profile_idc, the constraint flags, level_idc
  return r.exp_golomb();
}

namespace {

// seq_scaling_matrix's lists, read past (H.264 7.3.2.1.1.1).
void skip_scaling_lists(BitReader& r, int chroma_format) {
  for (int i = 0; i < (chroma_format == 3 ? 12 : 8); ++i) {
    if (!r.bit()) continue;
    int last = 8, next = 8;
    for (int j = 0; j < (i < 6 ? 16 : 64); ++j) {
      if (next != 0) next = (last + r.signed_golomb() + 256) % 256;
      last = next == 0 ? last : next;
    }
  }
}

bool high_profile(int profile) {
  for (const int p : {100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135})
    if (p == profile) return true;
  return false;
}

}  // namespace

// H.264 7.3.2.1.1, read as far as frame_mbs_only_flag.
bool sps_frames_only(const Bytes& sps) {
  if (sps.size() < 4) throw input_error("a sequence parameter set of under 4 bytes");
  BitReader r(sps, 4);
  (void)r.exp_golomb();  // its id
  if (high_profile(sps[1])) {
    const int chroma_format = r.exp_golomb();
    if (chroma_format == 3) (void)r.bit();  // separate_colour_plane_flag
    (void)r.exp_golomb();                   // bit depths
    (void)r.exp_golomb();
    (void)r.bit();  // qpprime_y_zero_transform_bypass_flag
    if (r.bit()) skip_scaling_lists(r, chroma_format);
  }
  (void)r.exp_golomb();  // log2_max_frame_num_minus4
  const int poc_type = r.exp_golomb();
  if (poc_type == 0) {
    (void)r.exp_golomb();
  } else if (poc_type == 1) {
    (void)r.bit();
    (void)r.signed_golomb();
    (void)r.signed_golomb();
    for (int k = r.exp_golomb(); k > 0; --k) (void)r.signed_golomb();
  }
  (void)r.exp_golomb();  // max_num_ref_frames
  (void)r.bit();         // gaps_in_frame_num_value_allowed_flag
  (void)r.exp_golomb();  // pic_width_in_mbs_minus1
  (void)r.exp_golomb();  // pic_height_in_map_units_minus1
  return r.bit() == 1;
}

int pps_id(const Bytes& nal) {
  BitReader r(nal, 1);
  return r.exp_golomb();
}

AvcConfig merge_avc_configs(AvcConfig base, const std::vector<AvcConfig>& others) {
  for (const AvcConfig& o : others) {
    if (o.length_size != base.length_size)
      throw input_error(fmt::format("NAL lengths of {} and {} bytes cannot be one stream's",
                                    o.length_size, base.length_size));
    add_sets(base.sps, o.sps, sps_id, "sequence");
    add_sets(base.pps, o.pps, pps_id, "picture");
  }
  return base;
}

bool starts_idr(std::span<const std::uint8_t> p, int length_size) {
  std::size_t at = 0;
  while (at + static_cast<std::size_t>(length_size) < p.size()) {
    std::size_t n = 0;
    for (int k = 0; k < length_size; ++k) n = (n << 8) | p[at + static_cast<std::size_t>(k)];
    at += static_cast<std::size_t>(length_size);
    if (n == 0 || at + n > p.size()) return false;  // damage: not a place to start from
    if ((p[at] & 0x1f) == kNalIdr) return true;
    at += n;
  }
  return false;
}

}  // namespace vpipe
