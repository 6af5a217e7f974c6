// vpipe's command line: the program's own options and every subcommand
// (commands.def), shared by the program (apps/vpipe.cpp) and the CLI fuzz target.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "commands/command.hpp"

namespace vpipe::cli {

class Cli {
 public:
  Cli();  // every command and option defined; parse with app.parse(...)
  CLI::App app{
      "vpipe: real-time video pipelines (decode → filters → encode) with measurable "
      "GPU memory strategies"};
  bool verbose = false;
  std::vector<std::string> plugins;

  // After a successful parse: the command given (the deepest, for a group's).
  [[nodiscard]] Command& chosen() const;
  // After a successful parse: its conversions (throws vpipe::usage_error naming the option).
  void finish() const { chosen().finish(); }

 private:
  std::vector<std::unique_ptr<Command>> commands_;  // commands.def's order
  std::vector<CLI::App*> apps_;                     // each command's, in the same order
};

}  // namespace vpipe::cli
