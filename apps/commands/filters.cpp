// vpipe filters: every filter --vf takes, with its parameters (the registry's,
// plugins included); --markdown: the same as docs/FILTERS.md shows it.
#include <fmt/format.h>

#include "commands/command.hpp"
#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe::cli {
namespace {

void print_text(const FilterInfo& info) {
  fmt::print("{}\n    {}\n    formats: {}; CUDA: {}\n", info.name, info.summary, info.formats,
             info.cuda ? "yes" : "no (CPU only)");
  for (const auto& p : info.params) {
    fmt::print(
        "    {:<8} {}{}\n", p.name, p.help,
        p.default_value.empty() ? " (required)" : fmt::format(" (default {})", p.default_value));
  }
  if (!info.example.empty()) fmt::print("    e.g. --vf \"{}\"\n", info.example);
}

std::string range_of(const ParamSpec& p) {
  switch (p.type) {
    case ParamType::kInt:
    case ParamType::kFloat:
      return p.min < p.max ? fmt::format("{}..{}", p.min, p.max) : "";
    case ParamType::kSize:
      return fmt::format("WxH, {}..{} a side", p.min, p.max);
    case ParamType::kChoice: {
      std::string out;
      for (const auto& c : p.choices) out += (out.empty() ? "" : " \\| ") + c;
      return out;
    }
    case ParamType::kBool:
      return "true \\| false";
    case ParamType::kString:
      return "text";
  }
  return "";
}

void print_markdown(const FilterInfo& info) {
  fmt::print("## {}\n\n{}\n\n- CPU: yes; CUDA: {}\n- formats: {}\n", info.name, info.summary,
             info.cuda ? "yes" : "no", info.formats);
  if (!info.example.empty()) fmt::print("- example: `--vf \"{}\"`\n", info.example);
  if (!info.params.empty()) {
    fmt::print("\n| parameter | values | default | what it does |\n|---|---|---|---|\n");
    for (const auto& p : info.params)
      fmt::print("| `{}` | {} | {} | {} |\n", p.name, range_of(p),
                 p.default_value.empty() ? "required" : fmt::format("`{}`", p.default_value),
                 p.help);
  }
  fmt::print("\n");
}

class FiltersCommand final : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    auto* app =
        parent.add_subcommand("filters", "list the filters --vf takes, with their parameters");
    app->add_flag("--markdown", markdown_,
                  "print them as docs/FILTERS.md shows them (a section each, parameters as a "
                  "table with their ranges)");
    return app;
  }
  int run() override {
    auto& reg = FilterRegistry::instance();
    for (const auto& name : reg.names())
      markdown_ ? print_markdown(reg.info(name)) : print_text(reg.info(name));
    if (!markdown_)
      fmt::print(
          "\nChain syntax: name=value:key=value,next…  e.g. \"resize=1280x720,blur=sigma=1.5\"\n");
    return 0;
  }

 private:
  bool markdown_ = false;
};

}  // namespace

std::unique_ptr<Command> make_filters_command() { return std::make_unique<FiltersCommand>(); }

}  // namespace vpipe::cli
