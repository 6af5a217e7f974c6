#include "vpipe/pipeline/io/hls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "vpipe/memory/errors.hpp"
#include "vpipe/pipeline/io/paths.hpp"

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

void write_hls_master(const std::string& dir, const std::vector<HlsRendition>& renditions) {
  std::string text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n";
  for (const auto& r : renditions) {
    const auto b = measure_rendition(r.playlist);
    text += fmt::format(
        "#EXT-X-STREAM-INF:BANDWIDTH={},AVERAGE-BANDWIDTH={},RESOLUTION={}x{}\n{}\n", b.peak,
        b.average, r.width, r.height, fs::relative(r.playlist, dir).generic_string());
  }
  write_file((fs::path(dir) / "master.m3u8").string(), text, "the HLS ladder's master playlist");
}

void remove_hls_rendition(const std::string& playlist) noexcept {
  remove_with_siblings(playlist, [](const std::string& name) {
    return name.rfind("seg_", 0) == 0 && fs::path(name).extension() == ".ts";
  });
}

}  // namespace vpipe
