#include "vpipe/pipeline/session/transcode_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "vpipe/memory/errors.hpp"
#include "vpipe/pipeline/io/containers.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"

#include "vpipe/pipeline/session/multi_transcode.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {

// The encoder options whose value is a file the encoder reads or writes itself, whether
// given alone (--encoder-option stats=F) or inside a codec library's own list
// (x264-params=stats=F:pass=1).
struct SideFile {
  std::string_view key;
  bool writes;
};
constexpr std::array kSideFiles{
    SideFile{"stats", true},
    SideFile{"dump-yuv", true},
    SideFile{"csv", true},
    SideFile{"analysis-save", true},
    SideFile{"recon", true},
    SideFile{"tcfile-out", true},
    SideFile{"analysis-reuse-file", true},
    SideFile{"qpfile", false},
    SideFile{"cqmfile", false},
    SideFile{"zonefile", false},
    SideFile{"dhdr10-info", false},
    SideFile{"analysis-load", false},
    SideFile{"lambda-file", false},
    SideFile{"scaling-list", false},
    SideFile{"tcfile-in", false},
};
// The codec libraries' own lists: "key=value" pairs joined by ':'.
constexpr std::array<std::string_view, 5> kParamLists{"x264-params", "x264opts", "x265-params",
                                                      "svtav1-params", "aom-params"};

// x264 and x265 take "dump_yuv" for "dump-yuv": one spelling to look up.
std::string dashed(std::string_view key) {
  std::string k(key);
  std::replace(k.begin(), k.end(), '_', '-');
  return k;
}
bool side_file_writes(std::string_view key, bool pass_reads) {
  const std::string k = dashed(key);
  for (const auto& s : kSideFiles)
    if (s.key == k) return s.writes && !(k == "stats" && pass_reads);
  return false;
}
bool is_side_file(std::string_view key) {
  const std::string k = dashed(key);
  return std::any_of(kSideFiles.begin(), kSideFiles.end(),
                     [&](const SideFile& s) { return s.key == k; });
}
// What a 2-pass stats file comes with: x264 and x265 write NAME.temp and rename it, and
// x264's macroblock tree (NAME.mbtree) and x265's CU tree (NAME.cutree) the same way.
constexpr std::array<std::string_view, 6> kStatsSiblings{".temp",   ".mbtree",      ".mbtree.temp",
                                                         ".cutree", ".cutree.temp", ""};

constexpr std::string_view kNoValue = "\x01";  // a flag in a library's list ("no-mbtree")

// Calls fn(key, value, writes) for each file an encoder option names, `value` by
// reference: staging rewrites it. A library's list is split and joined again.
template <class Fn>
void for_each_side_file(std::vector<std::string>& options, Fn fn) {
  for (auto& kv : options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    std::string value = kv.substr(eq + 1);
    if (std::find(kParamLists.begin(), kParamLists.end(), key) == kParamLists.end()) {
      if (is_side_file(key)) fn(std::string_view(key), value, side_file_writes(key, false));
      kv = key + "=" + value;
      continue;
    }
    std::vector<std::pair<std::string, std::string>> pairs;
    for (std::size_t at = 0; at <= value.size();) {
      const auto colon = std::min(value.find(':', at), value.size());
      const std::string pair = value.substr(at, colon - at);
      const auto e = pair.find('=');
      pairs.emplace_back(pair.substr(0, e),
                         e == std::string::npos ? std::string(kNoValue) : pair.substr(e + 1));
      at = colon + 1;
    }
    // x264/x265 read the stats file in passes 2 and 3 (3 rewrites it in place: not staged).
    const bool pass_reads = std::any_of(pairs.begin(), pairs.end(), [](const auto& p) {
      return p.first == "pass" && (p.second == "2" || p.second == "3");
    });
    std::string joined;
    for (auto& [k, v] : pairs) {
      if (is_side_file(k) && v != kNoValue)
        fn(std::string_view(k), v, side_file_writes(k, pass_reads));
      joined += (joined.empty() ? "" : ":") + k + (v == kNoValue ? "" : "=" + v);
    }
    kv = key + "=" + joined;
  }
}

void declare_encoder_files(RunFiles& files, const TranscodeOptions& o, const std::string& who) {
  auto options = o.encoder_options;  // a copy: declaring changes nothing
  for_each_side_file(options, [&](std::string_view key, std::string& value, bool writes) {
    const std::string what = fmt::format("{}encoder option {}", who, key);
    if (!writes) return files.reads(value, what);
    if (o.encode_segments > 1)
      throw usage_error(
          fmt::format("{} {}: --encode-segments runs {} encoders, which would all "
                      "write that one file",
                      what, value, o.encode_segments));
    files.writes(value, what);
    if (dashed(key) == "stats")
      for (const auto sibling : kStatsSiblings)
        if (!sibling.empty()) files.writes(value + std::string(sibling), what + " (beside it)");
  });
  // A 2-pass run that names no stats file (pass=1 in a library's list, or flags=+pass1)
  // writes the library's own, in the working folder.
  bool pass = false, named = false;
  for (const auto& kv : o.encoder_options) {
    pass |= kv.find("pass=1") != std::string::npos || kv.find("pass=3") != std::string::npos ||
            (kv.rfind("flags=", 0) == 0 && kv.find("pass1") != std::string::npos);
    named |= kv.rfind("stats=", 0) == 0 || kv.find(":stats=") != std::string::npos ||
             kv.find("-params=stats=") != std::string::npos ||
             kv.find("opts=stats=") != std::string::npos;
  }
  if (pass && !named)
    for (const auto* log : {"x264_2pass.log", "x265_2pass.log"})
      for (const auto sibling : kStatsSiblings)
        files.writes(log + std::string(sibling), who + "encoder pass 1");
}

void declare_run(RunFiles& files, const TranscodeOptions& o, const std::string& who) {
  const auto outputs = output_list(o);
  if (const auto& dir = ladder_dir(o); !dir.empty())
    files.writes_tree(dir, who + (o.hls.empty() ? "--dash" : "--hls"));
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const std::string what =
        outputs.size() > 1 ? fmt::format("{}output {}", who, k + 1) : who + "output";
    if (ladder_dir(o).empty()) {
      // FFmpeg's hls and dash muxers write segments beside the playlist, in place, under
      // names nobody declared (out0.ts replaced an input of that name): a ladder does it whole.
      const AVOutputFormat* f =
          local_file(outputs[k].output) ? output_container(outputs[k].output) : nullptr;
      if (f && (std::string_view(f->name) == "hls" || std::string_view(f->name) == "dash"))
        throw usage_error(fmt::format(
            "{} '{}': a playlist's segments would be written beside it, in place; give the "
            "outputs as renditions with --{} DIR, which writes the ladder whole",
            what, outputs[k].output, f->name));
      files.writes(outputs[k].output, what);
    } else if (std::error_code ec;
               fs::is_symlink(fs::symlink_status(fs::path(outputs[k].output).parent_path(), ec))) {
      throw usage_error(
          fmt::format("{} '{}': the rendition's folder is a symbolic link; vpipe "
                      "writes a ladder inside its folder only",
                      what, outputs[k].output));
    }
    declare_encoder_files(files, outputs[k], who);
  }
}

}  // namespace

void declare_files(RunFiles& files, const TranscodeOptions& o, const std::string& who) {
  files.reads(o.input, who + "input");
  if (o.streams <= 1) return declare_run(files, o, who);
  for (int k = 1; k <= o.streams; ++k) {
    TranscodeOptions each = o;
    each.output = stream_output_name(o.output, k);
    declare_run(files, each, fmt::format("{}stream {} ", who, k));
  }
}

void EncoderSideFiles::stage(TranscodeOptions& o) {
  for_each_side_file(o.encoder_options, [&](std::string_view, std::string& value, bool writes) {
    const auto target = local_file(value);
    if (!writes || !target) return;
    const std::string where = final_target(*target);
    const std::string temp = create_staging_file(where, fmt::format("encoder file '{}'", where));
    files_.push_back({where, temp});
    value = files_.back().temp;
  });
}

namespace {
constexpr std::array<std::string_view, 3> kSiblings{"", ".mbtree", ".cutree"};  // x264, x265
}  // namespace

void EncoderSideFiles::commit() {
  for (const auto& f : files_)
    for (const auto suffix : kSiblings) {
      const std::string from = f.temp + std::string(suffix), to = f.target + std::string(suffix);
      std::error_code ec;
      if (std::filesystem::exists(from, ec) && ::rename(from.c_str(), to.c_str()) != 0)
        throw input_error(fmt::format("cannot put the encoder's file '{}' in place: {}", to,
                                      std::strerror(errno)));
    }
  files_.clear();
}

EncoderSideFiles::~EncoderSideFiles() {
  for (const auto& f : files_)  // not committed: what the encoder began goes
    for (const auto suffix : kSiblings)
      for (const auto* temp : {"", ".temp"}) {
        std::error_code ec;
        std::filesystem::remove(f.temp + std::string(suffix) + temp, ec);
      }
}

void check_files(const TranscodeOptions& o) {
  RunFiles files;
  declare_files(files, o);
  files.check();
}

}  // namespace vpipe
