// One subcommand of vpipe: its options (add), the conversions CLI11 does not
// make (finish), and what it does (run). Each lives in its own file here;
// commands.def lists them in --help's order. Adding a subcommand: a file with a
// Command and its make_…_command(), and one line in commands.def.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string_view>

namespace vpipe::cli {

class Command {
 public:
  virtual ~Command() = default;
  // The group this command sits under ("bench"), or empty: a top-level command.
  [[nodiscard]] virtual std::string_view parent() const { return {}; }
  // Adds the subcommand and its options to `parent`; returns it.
  virtual CLI::App* add(CLI::App& parent) = 0;
  // After a parse that chose this command: sizes, durations, lists (throws
  // vpipe::usage_error naming the flag).
  virtual void finish() {}
  // Runs it; the exit status (exit_codes.hpp).
  virtual int run() = 0;
};

// A group of commands (bench): it only holds them; one of them must be given.
class Group : public Command {
 public:
  Group(std::string_view name, std::string_view help) : name_(name), help_(help) {}
  CLI::App* add(CLI::App& parent) override {
    auto* app = parent.add_subcommand(std::string(name_), std::string(help_));
    app->require_subcommand(1);
    return app;
  }
  int run() override { return 2; }  // never chosen: CLI11 requires one of its commands

 private:
  std::string_view name_, help_;
};

}  // namespace vpipe::cli
