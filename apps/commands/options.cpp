// vpipe options: transcode's option schema as a markdown table (docs/OPTIONS.md).
#include <fmt/format.h>

#include "commands/command.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"

namespace vpipe::cli {
namespace {

class OptionsCommand final : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    return parent.add_subcommand(
        "options",
        "list transcode's options: key, flag, values, default, where each applies (markdown; "
        "docs/OPTIONS.md is this)");
  }
  int run() override {
    fmt::print("{}", option_table_markdown());
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_options_command() { return std::make_unique<OptionsCommand>(); }

}  // namespace vpipe::cli
