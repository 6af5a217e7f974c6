// The transcode option schema: one row per user option (its key, its
// command-line flag, its type and range, its help, where it applies, the
// front ends that take it), from which
//   - `vpipe transcode` registers its flags (apps/cli.cpp),
//   - vpipe run's YAML and the Python package set their keys (set_option),
//   - `vpipe options` and docs/OPTIONS.md list them.
// A value is parsed and range-checked by its row only; the default shown is
// the value of a default-made TranscodeOptions, read through the row.
// Adding an option: a field in TranscodeOptions and one row in option_schema.cpp.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe {

// The front ends that take an option.
enum FrontEnd : unsigned {
  kCommandLine = 1,  // vpipe transcode
  kConfig = 2,       // a stream of vpipe run's config
  kPython = 4,       // vpipe.transcode(..., key=value), vpipe.Decoder
  kEveryFrontEnd = kCommandLine | kConfig | kPython,
};

// How the command line takes an option.
enum class Form {
  kValue,       // --key VALUE
  kSwitch,      // --key (true); false elsewhere is "false", "0", "no", "off"
  kRepeatable,  // --key VALUE, given again for each value
  kPositional,  // the key's place (input, output), required
};

struct OptionSpec {
  std::string key;      // the name in a config and in Python: "queue_depth"
  std::string flag;     // the command line's name: "--queue-depth", or "input" (positional)
  std::string alias;    // another spelling configs take ("vf"), or empty
  std::string value;    // what a value looks like: "0..51", "{pad|crop|error}", "SIZE (512M, 2G)"
  std::string applies;  // where it has an effect ("CUDA path", "live input"), empty: always
  std::string help;
  Form form = Form::kValue;
  unsigned front_ends = kEveryFrontEnd;
  bool per_output = false;          // one output of several may set it (OUT:key=value)
  std::vector<std::string> ffmpeg;  // FFmpeg's spellings ("-t"), answered with this flag
  // Sets the field from text; throws usage_error with " VALUE: why" (set_option adds the key).
  std::function<void(TranscodeOptions&, const std::string&)> set;
  // The field as text (repeatable: joined with ','); a default-made TranscodeOptions' is the
  // default.
  std::function<std::string(const TranscodeOptions&)> get;

  [[nodiscard]] std::string default_text() const { return get(TranscodeOptions{}); }
};

// Every user option of a transcode, in the order `--help` lists them.
[[nodiscard]] const std::vector<OptionSpec>& option_schema();
// The row of `key` (by key or alias), or nullptr.
[[nodiscard]] const OptionSpec* find_option(std::string_view key);
// The row FFmpeg's tool spells `arg` ("-t", "-c:v"), or nullptr.
[[nodiscard]] const OptionSpec* find_ffmpeg_spelling(std::string_view arg);
// Sets option `key` from text ("23", "true", "pinned", "2G"); throws usage_error
// naming `where`, the key and the problem, or listing the known keys when
// `key` is not one (or is not taken by `front_end`).
void set_option(TranscodeOptions& o, std::string_view key, const std::string& value,
                std::string_view where, FrontEnd front_end);
// A list of values for `key`: each set in turn where the option is repeatable
// (input_option), else a usage_error saying it takes one value. For configs and bindings.
void set_option(TranscodeOptions& o, std::string_view key, const std::vector<std::string>& values,
                std::string_view where, FrontEnd front_end);
// Several outputs from one decode (`--output`): "PATH[:key=value…]", split at each
// ":key=" whose key an output may set (per_output), so a path or a filter's own
// colons stay whole. The options of that output: `top`'s, with its path and keys
// (its chain its own; output_list puts the run's --vf before it).
// Throws usage_error naming the output and the key.
[[nodiscard]] TranscodeOptions output_options(const TranscodeOptions& top, const std::string& spec);
// --hls DIR: rendition NAME's playlist, DIR/NAME/index.m3u8; --dash DIR: its
// manifest, DIR/NAME/manifest.mpd (throws usage_error for a NAME that is not a
// plain name).
[[nodiscard]] std::string rendition_path(const TranscodeOptions& top, const std::string& name);
// Every output of a run: `output` then each of `outputs` (one: `top` as it is).
[[nodiscard]] std::vector<TranscodeOptions> output_list(const TranscodeOptions& top);
// The schema as a markdown table (docs/OPTIONS.md, `vpipe options`).
[[nodiscard]] std::string option_table_markdown();

// Units parsed in one place, for the schema and every other option that takes them.
// "1.5G", "800M", "64K", "1048576" → bytes; throws usage_error naming `what`.
[[nodiscard]] std::size_t parse_bytes(const std::string& text, std::string_view what);
// "800k", "5M", "1.5M", "2500000" → bits per second (k = 1000, as FFmpeg's -b:v);
// throws usage_error naming `what`.
[[nodiscard]] std::int64_t parse_bitrate(const std::string& text, std::string_view what);
// "90", "90s", "20m", "2h" → seconds; throws usage_error naming `what`.
[[nodiscard]] double parse_duration(const std::string& text, std::string_view what);

}  // namespace vpipe
