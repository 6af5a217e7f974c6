#include "vpipe/pipeline/io/hls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"

namespace vpipe {

namespace fs = std::filesystem;

HlsBandwidth measure_rendition(const std::string& playlist) {
  std::ifstream in(playlist);
  if (!in) throw input_error(fmt::format("{}: cannot read the rendition's playlist", playlist));
  HlsBandwidth b;
  double duration = -1, total_s = 0, total_bits = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#EXTINF:", 0) == 0) {
      duration = std::stod(line.substr(8));
      continue;
    }
    if (line.empty() || line[0] == '#' || duration < 0) continue;
    const auto segment = fs::path(playlist).parent_path() / line;
    std::error_code ec;
    const auto bytes = fs::file_size(segment, ec);
    if (ec) throw input_error(fmt::format("{}: segment {} is missing", playlist, line));
    const double bits = 8.0 * static_cast<double>(bytes);
    if (duration > 0) b.peak = std::max(b.peak, static_cast<long long>(bits / duration + 0.5));
    total_bits += bits;
    total_s += duration;
    b.segments++;
    duration = -1;
  }
  if (total_s > 0) b.average = static_cast<long long>(total_bits / total_s + 0.5);
  return b;
}

namespace {

using Bytes = std::vector<std::uint8_t>;

// The NAL units of Annex B extradata (start codes 00 00 01), each without its start code.
std::vector<Bytes> annex_b_units(const std::uint8_t* p, int size) {
  std::vector<Bytes> units;
  int start = -1;
  for (int i = 0; i + 2 < size; ++i) {
    if (p[i] != 0 || p[i + 1] != 0 || p[i + 2] != 1) continue;
    if (start >= 0) units.emplace_back(p + start, p + i - (i > 0 && p[i - 1] == 0 ? 1 : 0));
    start = i + 3;
    i += 2;
  }
  if (start >= 0 && start < size) units.emplace_back(p + start, p + size);
  return units;
}

Bytes without_emulation_prevention(const Bytes& nal) {
  Bytes out;
  for (std::size_t i = 0; i < nal.size(); ++i) {
    if (i >= 2 && nal[i] == 3 && nal[i - 1] == 0 && nal[i - 2] == 0) continue;
    out.push_back(nal[i]);
  }
  return out;
}

// avc1.PPCCLL: profile_idc, the constraint flags and level_idc of the SPS.
std::string avc1(const AVCodecParameters* par) {
  const std::uint8_t* x = par->extradata;
  if (par->extradata_size >= 4 && x[0] == 1)  // avcC
    return fmt::format("avc1.{:02x}{:02x}{:02x}", x[1], x[2], x[3]);
  for (const Bytes& nal : annex_b_units(x, par->extradata_size))
    if (nal.size() >= 4 && (nal[0] & 0x1f) == 7)
      return fmt::format("avc1.{:02x}{:02x}{:02x}", nal[1], nal[2], nal[3]);
  return {};
}

// hvc1.[space]PROFILE.COMPAT.[L|H]LEVEL.CONSTRAINTS (ISO/IEC 14496-15 E.3) from the 12 bytes
// of general_profile_tier_level.
std::string hvc1(const std::uint8_t* ptl) {
  static constexpr const char* kSpace[] = {"", "A", "B", "C"};
  std::uint32_t compat = 0, reversed = 0;
  for (int i = 0; i < 4; ++i) compat = compat << 8 | ptl[1 + i];
  for (int i = 0; i < 32; ++i) reversed |= ((compat >> i) & 1u) << (31 - i);
  std::string s = fmt::format("hvc1.{}{}.{:X}.{}{}", kSpace[ptl[0] >> 6], ptl[0] & 0x1f, reversed,
                              (ptl[0] >> 5) & 1 ? "H" : "L", ptl[11]);
  int last = 10;
  while (last >= 5 && ptl[last] == 0) --last;
  for (int i = 5; i <= last; ++i) s += fmt::format(".{:X}", ptl[i]);
  return s;
}

std::string hevc(const AVCodecParameters* par) {
  const std::uint8_t* x = par->extradata;
  if (par->extradata_size >= 23 && x[0] == 1) return hvc1(x + 1);  // hvcC
  for (const Bytes& nal : annex_b_units(x, par->extradata_size)) {
    if (nal.size() < 2 || ((nal[0] >> 1) & 0x3f) != 33) continue;  // the SPS
    const Bytes rbsp = without_emulation_prevention(Bytes(nal.begin() + 2, nal.end()));
    if (rbsp.size() >= 13) return hvc1(rbsp.data() + 1);
  }
  return {};
}

}  // namespace

std::string rfc6381_codec(const AVCodecParameters* par) {
  switch (par->codec_id) {
    case AV_CODEC_ID_H264:
      return avc1(par);
    case AV_CODEC_ID_HEVC:
      return hevc(par);
    case AV_CODEC_ID_AAC:  // the audio object type: FFmpeg's profile + 1 (LC: 2)
      return fmt::format("mp4a.40.{}", par->profile >= 0 ? par->profile + 1 : 2);
    case AV_CODEC_ID_MP3:
      return "mp4a.40.34";
    case AV_CODEC_ID_AC3:
      return "ac-3";
    case AV_CODEC_ID_EAC3:
      return "ec-3";
    default:
      return {};
  }
}

std::string rendition_codecs(const std::string& playlist) {
  std::ifstream in(playlist);
  std::string first;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') {
      first = (fs::path(playlist).parent_path() / line).string();
      break;
    }
  if (first.empty()) return {};
  const UniqueDemuxContext segment = open_input(first);
  std::string codecs;
  for (unsigned i = 0; i < segment->nb_streams; ++i) {
    const AVCodecParameters* par = segment->streams[i]->codecpar;
    if (par->codec_type != AVMEDIA_TYPE_VIDEO && par->codec_type != AVMEDIA_TYPE_AUDIO) continue;
    const std::string name = rfc6381_codec(par);
    if (name.empty()) return {};
    codecs += (codecs.empty() ? "" : ",") + name;
  }
  return codecs;
}

void write_hls_master(const std::string& dir, const std::vector<HlsRendition>& renditions) {
  std::string text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n";
  for (const auto& r : renditions) {
    const auto b = measure_rendition(r.playlist);
    const std::string codecs = rendition_codecs(r.playlist);
    text += fmt::format(
        "#EXT-X-STREAM-INF:BANDWIDTH={},AVERAGE-BANDWIDTH={},RESOLUTION={}x{}{}\n{}\n", b.peak,
        b.average, r.width, r.height, codecs.empty() ? "" : ",CODECS=\"" + codecs + "\"",
        fs::relative(r.playlist, dir).generic_string());
  }
  write_file((fs::path(dir) / "master.m3u8").string(), text, "the HLS ladder's master playlist");
}

void remove_hls_rendition(const std::string& playlist) noexcept {
  remove_with_siblings(playlist, [](const std::string& name) {
    return name.rfind("seg_", 0) == 0 && fs::path(name).extension() == ".ts";
  });
}

}  // namespace vpipe
