#include "run/fleet_config.hpp"
#include "vpipe/pipeline/session/stream_copy.hpp"

#include "vpipe/pipeline/io/paths.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/run_files.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/transcode_files.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

namespace vpipe {

namespace {

// A stream's own keys (the rest are transcode options, from the one table).
const std::set<std::string> kFleetKeys = {"name", "restart", "restart_on_end", "skip_done"};

std::string known_keys() {
  std::string out;
  for (const auto& k : kFleetKeys) out += (out.empty() ? "" : ", ") + k;
  for (const auto& k : option_schema())
    if (k.front_ends & kConfig)
      out += fmt::format(", {}{}", k.key, k.alias.empty() ? "" : fmt::format(" ({})", k.alias));
  return out;
}

// "streams[2] (cam), line 14": where a key of the config is, for its messages.
std::string at_line(const std::string& where, const YAML::Node& node) {
  return node.Mark().is_null() ? where : fmt::format("{}, line {}", where, node.Mark().line + 1);
}

// Merges `defaults` under `stream` (the stream's keys win) and checks the keys,
// each mistake blamed on where it is written (defaults or the stream) and its line.
YAML::Node merged(const YAML::Node& defaults, const YAML::Node& stream, const std::string& path,
                  const std::string& where) {
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& [n, whose] :
       {std::pair{&defaults, path + ": defaults"}, std::pair{&stream, where}}) {
    if (!n->IsDefined() || n->IsNull()) continue;
    if (!n->IsMap())
      throw usage_error(fmt::format("{}: expected a map of settings", at_line(whose, *n)));
    for (const auto& kv : *n) {
      const auto key = kv.first.as<std::string>();
      const OptionSpec* option = find_option(key);
      if (!kFleetKeys.count(key) && !option)
        throw usage_error(fmt::format("{}: unknown key '{}' (keys: {})", at_line(whose, kv.first),
                                      key, known_keys()));
      if (option && !(option->front_ends & kConfig)) {  // the schema says why not here
        TranscodeOptions unused;
        set_option(unused, key, "", at_line(whose, kv.first), kConfig);
      }
      out[key] = kv.second;
    }
  }
  return out;
}

// What the session would refuse before its first frame, refused at load (and
// so by --check): the filter chain, the container, the encoder and its preset.
void check_before_work(const TranscodeOptions& o, const std::string& here) {
  try {  // each output as the session makes it (a ladder's: DIR/NAME/index.m3u8)
    if (is_stream_copy(o)) {  // nothing is decoded or encoded: what a copy cannot apply
      check_stream_copy(o);
      return;
    }
    for (const auto& each : output_list(o)) {
      (void)check_before_opening(each);
      if (each.output != "null") {
        TranscodePlan p;
        (void)choose_encoder(each, {}, p);
      }
    }
  } catch (const std::exception& e) {
    throw usage_error(fmt::format("{}: {}", here, e.what()));
  }
}

StreamSpec stream_of(const YAML::Node& n, const std::string& where) {
  StreamSpec s;
  s.name = n["name"].as<std::string>("");
  if (s.name.empty()) throw input_error(fmt::format("{}: 'name' is required", where));
  const std::string here = fmt::format("{} ({})", where, s.name);
  auto& o = s.options;
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    if (kFleetKeys.count(key)) continue;
    const auto line = at_line(here, kv.second);  // values keep their line
    if (kv.second.IsSequence()) {  // a repeatable option's values; the schema says which
      set_option(o, key, kv.second.as<std::vector<std::string>>(), line, kConfig);
      continue;
    }
    if (!kv.second.IsScalar())
      throw usage_error(fmt::format("{}: '{}' takes one value", line, key));
    set_option(o, key, kv.second.Scalar(), line, kConfig);
  }
  if (o.input.empty() || o.output.empty())
    throw usage_error(fmt::format("{}: 'input' and 'output' are required", here));
  if (const auto r = n["restart"]) {
    s.restart.max = r["max"].as<int>(s.restart.max);
    s.restart.backoff_s = r["backoff_s"].as<double>(s.restart.backoff_s);
    s.restart.backoff_max_s = r["backoff_max_s"].as<double>(s.restart.backoff_max_s);
    if (s.restart.max < 0 || s.restart.backoff_s < 0 ||
        s.restart.backoff_max_s < s.restart.backoff_s)
      throw input_error(
          fmt::format("{}: restart: max ≥ 0 and 0 ≤ backoff_s ≤ backoff_max_s", here));
  }
  s.restart_on_end = n["restart_on_end"].as<bool>(is_live_input(o.input));
  s.skip_done = n["skip_done"].as<bool>(false);
  return s;
}

}  // namespace

void check_fleet_paths(const FleetConfig& c, const std::string& report) {
  RunFiles files;  // the one list of what the fleet reads and writes, every stream's outputs too
  files.reads(c.path, "the config");
  files.writes(report, "--report");
  for (const auto& s : c.streams)
    declare_files(files, s.options, fmt::format("{}: stream '{}' ", c.path, s.name));
  files.check();
}

FleetConfig load_fleet_config(const std::string& path) {
  FleetConfig c;
  c.path = path;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw input_error(fmt::format("{}: cannot read the config", path));
  } catch (const YAML::Exception& e) {
    throw input_error(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap() || !root["streams"] || !root["streams"].IsSequence())
    throw input_error(fmt::format("{}: expected a map with a 'streams' list", path));
  std::set<std::string> names;
  int k = 0;
  for (const auto& node : root["streams"]) {
    const std::string where = fmt::format("{}: streams[{}]", path, k++);
    try {
      StreamSpec s = stream_of(merged(root["defaults"], node, path, where), where);
      if (!names.insert(s.name).second)
        throw usage_error(fmt::format("{}: the name '{}' is used twice", where, s.name));
      c.streams.push_back(std::move(s));
    } catch (const YAML::Exception& e) {
      throw input_error(fmt::format("{}: {} (line {})", where, e.msg, e.mark.line + 1));
    }
  }
  check_fleet_paths(c);
  for (std::size_t i = 0; i < c.streams.size(); ++i)
    check_before_work(c.streams[i].options,
                      fmt::format("{}: streams[{}] ({})", path, i, c.streams[i].name));
  return c;
}

std::vector<std::string> shard_streams(std::vector<std::string> names, int index, int count) {
  if (count < 1 || index < 0 || index >= count)
    throw input_error(fmt::format("--shard {}/{}: expected 0 ≤ index < count", index, count));
  std::sort(names.begin(), names.end());
  std::vector<std::string> mine;
  for (std::size_t i = static_cast<std::size_t>(index); i < names.size();
       i += static_cast<std::size_t>(count))
    mine.push_back(names[i]);
  return mine;
}

std::pair<int, int> parse_shard(const std::string& text) {
  int index = -1, count = 0;
  char slash = 0;
  std::istringstream in(text);
  if (!(in >> index >> slash >> count) || slash != '/' || !in.eof())
    throw input_error(fmt::format("--shard {}: expected INDEX/COUNT, e.g. 0/3", text));
  (void)shard_streams({}, index, count);  // checks the range
  return {index, count};
}

}  // namespace vpipe
