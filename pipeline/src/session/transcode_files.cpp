#include "vpipe/pipeline/session/transcode_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "vpipe/base/errors.hpp"
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
// A 2-pass stats file and what comes with it: x264's macroblock tree (NAME.mbtree) and
// x265's CU tree (NAME.cutree). Each is written as its name plus kWhileWritten, then renamed.
constexpr std::array<std::string_view, 3> kStatsFiles{"", ".mbtree", ".cutree"};
constexpr std::string_view kWhileWritten = ".temp";

constexpr std::string_view kNoValue = "\x01";  // a flag in a library's list ("no-mbtree")

// A codec library's list, "key=value:key:…", as pairs (a flag's value is kNoValue).
std::vector<std::pair<std::string, std::string>> split_list(const std::string& value) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t at = 0; at <= value.size();) {
    const auto colon = std::min(value.find(':', at), value.size());
    const std::string pair = value.substr(at, colon - at);
    const auto e = pair.find('=');
    pairs.emplace_back(pair.substr(0, e),
                       e == std::string::npos ? std::string(kNoValue) : pair.substr(e + 1));
    at = colon + 1;
  }
  return pairs;
}

// Whether the options run a first (or third) pass: pass=1 or 3 in a library's list, or the
// codec context's flags=+pass1.
bool first_pass(const std::vector<std::string>& options) {
  for (const auto& kv : options) {
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq),
                      value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (key == "flags" && value.find("pass1") != std::string::npos) return true;
    if (std::find(kParamLists.begin(), kParamLists.end(), key) == kParamLists.end()) continue;
    for (const auto& [k, v] : split_list(value))
      if (k == "pass" && (v == "1" || v == "3")) return true;
  }
  return false;
}

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
    auto pairs = split_list(value);
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
  const auto writes_stats = [&](const std::string& name, const std::string& what) {
    for (const auto file : kStatsFiles)
      for (const auto temp : {std::string_view(), kWhileWritten})
        if (!file.empty() || !temp.empty())
          files.writes(name + std::string(file) + std::string(temp), what + " (beside it)");
  };
  auto options = o.encoder_options;  // a copy: declaring changes nothing
  bool named = false;                // a stats file named: the libraries' default is not used
  for_each_side_file(options, [&](std::string_view key, std::string& value, bool writes) {
    const std::string what = fmt::format("{}encoder option {}", who, key);
    named |= dashed(key) == "stats";
    if (!writes) return files.reads(value, what);
    if (o.encode_segments > 1)
      throw usage_error(
          fmt::format("{} {}: encode_segments runs {} encoders, which would all "
                      "write that one file",
                      what, value, o.encode_segments));
    files.writes(value, what);
    if (dashed(key) == "stats") writes_stats(value, what);
  });
  // A 2-pass run that names no stats file writes the library's own, in the working folder.
  if (first_pass(o.encoder_options) && !named)
    for (const std::string log : {"x264_2pass.log", "x265_2pass.log"}) {
      files.writes(log, who + "encoder pass 1");
      writes_stats(log, who + "encoder pass 1");
    }
}

void declare_run(RunFiles& files, const TranscodeOptions& o, const std::string& who) {
  const auto outputs = output_list(o);
  if (const auto& dir = ladder_dir(o); !dir.empty())
    files.writes_tree(dir, who + (o.hls.empty() ? "dash" : "hls"));
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
            "outputs as renditions with {} DIR, which writes the ladder whole",
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

void EncoderSideFiles::commit() {
  for (const auto& f : files_)
    for (const auto suffix : kStatsFiles) {
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
    for (const auto suffix : kStatsFiles)
      for (const auto temp : {std::string_view(), kWhileWritten}) {
        std::error_code ec;
        std::filesystem::remove(f.temp + std::string(suffix) + std::string(temp), ec);
      }
}

void check_files(const TranscodeOptions& o) {
  RunFiles files;
  declare_files(files, o);
  files.check();
}

}  // namespace vpipe
