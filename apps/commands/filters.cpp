// vpipe filters: every filter --vf takes, with its parameters (the registry's).
#include <fmt/format.h>

#include "commands/command.hpp"
#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe::cli {
namespace {

int run_filters() {
  auto& reg = vpipe::FilterRegistry::instance();
  for (const auto& name : reg.names()) {
    const auto& info = reg.info(name);
    fmt::print("{}\n    {}\n    formats: {}; CUDA: {}\n", name, info.summary, info.formats,
               info.cuda ? "yes" : "no (CPU only)");
    for (const auto& p : info.params) {
      fmt::print(
          "    {:<8} {}{}\n", p.name, p.help,
          p.default_value.empty() ? " (required)" : fmt::format(" (default {})", p.default_value));
    }
  }
  fmt::print(
      "\nChain syntax: name=value:key=value,next…  e.g. \"resize=1280x720,blur=sigma=1.5\"\n");
  return 0;
}

class FiltersCommand final : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    return parent.add_subcommand("filters", "list the filters --vf takes, with their parameters");
  }
  int run() override { return run_filters(); }
};

}  // namespace

std::unique_ptr<Command> make_filters_command() { return std::make_unique<FiltersCommand>(); }

}  // namespace vpipe::cli
