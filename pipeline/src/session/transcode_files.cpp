#include "vpipe/pipeline/session/transcode_files.hpp"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "vpipe/pipeline/session/multi_transcode.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"

namespace vpipe {

namespace {

// The encoder options whose value is a file the encoder reads or writes itself, whether
// given alone (--encoder-option stats=F) or inside a codec library's own list
// (x264-params=stats=F:pass=1).
struct SideFile {
  std::string_view key;
  bool writes;
};
constexpr std::array kSideFiles{
    SideFile{"stats", true},          SideFile{"dump-yuv", true},   SideFile{"csv", true},
    SideFile{"analysis-save", true},  SideFile{"recon", true},      SideFile{"tcfile-out", true},
    SideFile{"analysis-reuse-file", true}, SideFile{"qpfile", false}, SideFile{"cqmfile", false},
    SideFile{"zonefile", false},      SideFile{"dhdr10-info", false}, SideFile{"analysis-load", false},
    SideFile{"lambda-file", false},   SideFile{"scaling-list", false}, SideFile{"tcfile-in", false},
};
// The codec libraries' own lists: "key=value" pairs joined by ':'.
constexpr std::array<std::string_view, 5> kParamLists{"x264-params", "x264opts", "x265-params",
                                                      "svtav1-params", "aom-params"};

void declare_side_file(RunFiles& files, std::string_view key, const std::string& value,
                       const std::string& who) {
  for (const auto& s : kSideFiles)
    if (s.key == key) {
      const std::string what = fmt::format("{}encoder option {}", who, key);
      s.writes ? files.writes(value, what) : files.reads(value, what);
    }
}

void declare_encoder_files(RunFiles& files, const TranscodeOptions& o, const std::string& who) {
  for (const auto& kv : o.encoder_options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (std::find(kParamLists.begin(), kParamLists.end(), key) == kParamLists.end()) {
      declare_side_file(files, key, value, who);
      continue;
    }
    bool pass = false, stats = false;
    for (std::size_t at = 0; at <= value.size();) {
      const auto colon = std::min(value.find(':', at), value.size());
      const std::string pair = value.substr(at, colon - at);
      const auto e = pair.find('=');
      const std::string k = pair.substr(0, e);
      if (e != std::string::npos) declare_side_file(files, k, pair.substr(e + 1), who);
      pass |= k == "pass";
      stats |= k == "stats";
      at = colon + 1;
    }
    if (pass && !stats)  // the library's default name, in the working folder
      declare_side_file(files, "stats", key.rfind("x265", 0) == 0 ? "x265_2pass.log" : "x264_2pass.log",
                        who);
  }
}

void declare_run(RunFiles& files, const TranscodeOptions& o, const std::string& who) {
  const auto outputs = output_list(o);
  if (const auto& dir = ladder_dir(o); !dir.empty())
    files.writes_tree(dir, who + (o.hls.empty() ? "--dash" : "--hls"));
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const std::string what =
        outputs.size() > 1 ? fmt::format("{}output {}", who, k + 1) : who + "output";
    if (ladder_dir(o).empty()) files.writes(outputs[k].output, what);
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

void check_files(const TranscodeOptions& o) {
  RunFiles files;
  declare_files(files, o);
  files.check();
}

}  // namespace vpipe
