// What several subcommands share: option helpers (enums, the metrics endpoint,
// --quick, sizes, GPU lists), JSON reports, and the stop signals.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe::cli {

[[nodiscard]] std::vector<std::string> split_list(const std::string& s);  // "a,b,,c" → a b c

// A count of 1 or more, said in words (CLI::PositiveNumber's message prints a
// 300-digit upper bound).
[[nodiscard]] const CLI::Validator& positive_count();

// An option whose value is an enum: the user types one of its names (one
// table, vpipe::EnumNames), the program sees the value.
template <class E>
CLI::Option* add_enum(CLI::App* app, const std::string& flag, E& value, const std::string& help) {
  std::string names;
  for (const auto& [name, v] : vpipe::names_of<E>()) names += (names.empty() ? "" : "|") + name;
  CLI::CheckedTransformer to_value(vpipe::names_of<E>());
  to_value.description("");
  return app->add_option(flag, value, help)
      ->transform(to_value)
      ->type_name("{" + names + "}")
      ->default_str(std::string(vpipe::name_of(value)));
}

// A transcode option on a bench or soak: its flag, the look of its value and its check are
// the option schema's row for `key` (option_schema.hpp), so a value means there what it means
// to transcode, parsed by one rule from one list of names. `help` says what the command does
// with it. A list target checks each value (a command's ->delimiter(',') splits them).
struct SchemaFlag {
  std::string flag, value;
  CLI::Validator check;  // "--mem: pool2: expected one of …" (CLI11 puts the flag first)
};
[[nodiscard]] SchemaFlag schema_flag(std::string_view key);
// `only`: the values this command takes, where it takes fewer than transcode ("cpu", "nvdec").
template <class T>
CLI::Option* add_schema_option(CLI::App* app, std::string_view key, T& target,
                               const std::string& help, std::vector<std::string> only = {}) {
  auto row = schema_flag(key);
  auto* opt = app->add_option(row.flag, target, help)->check(row.check);
  if (!only.empty()) {
    std::string look;
    for (const auto& v : only) look += (look.empty() ? "{" : "|") + v;
    CLI::Validator member = CLI::IsMember(only);
    opt->check(member.description(""))->type_name(look + "}");
  } else {
    opt->type_name(row.value);
  }
  return opt->capture_default_str();
}

// --metrics-port / --metrics-address: one endpoint for soak, transcode and run.
struct MetricsEndpoint {
  int port = 0;  // 0: off
  std::string address = "127.0.0.1";
};
void add_metrics_options(CLI::App* app, MetricsEndpoint& endpoint);

// --quick on the benches that take an input: the smallest run of every row kind
// (a smoke, not for results); each bench's finish() applies it to the options
// the user did not give (given(app, flag) says which were).
void add_quick(CLI::App* bench, bool& quick);
[[nodiscard]] inline bool given(const CLI::App* app, const char* flag) {
  return app->count(flag) > 0;
}

// "WxH" from 2x2 to 16384x16384; throws usage_error naming `flag`.
void parse_size(const std::string& text, const char* flag, int& width, int& height);
// --gpus text → device indices, against the devices visible now.
[[nodiscard]] std::vector<int> gpus_of(const std::string& text);

// Writes `j` to `path` whole or not at all (nothing when path is empty).
void write_json(const std::string& path, const nlohmann::json& j);
// Whether the standard output was closed when vpipe started (main made it /dev/null):
// a report for it would be lost, so `--report -` is refused.
void note_closed_stdout();
[[nodiscard]] bool stdout_was_closed();

// The stop signals. First SIGINT/SIGTERM/SIGHUP: stop_signal() holds it and the
// run stops gracefully (outputs finalized). Second: leave at once, removing the
// unfinished outputs unless kept. SIGURG only breaks a blocking read.
[[nodiscard]] std::atomic<int>& stop_signal();
void install_stop_signals();
// A run that a signal stopped exits with 128 + the signal; 0 when none came.
[[nodiscard]] int signal_exit_status();

}  // namespace vpipe::cli
