// The commands under `vpipe bench`: each a Command with its bench's options.
#pragma once

#include "commands/command.hpp"
#include "commands/common.hpp"

namespace vpipe::cli {

template <class Options>
class BenchCommand : public Command {
 public:
  [[nodiscard]] std::string_view parent() const override { return "bench"; }

 protected:
  CLI::App* app_ = nullptr;
  Options o_;
  bool quick_ = false;  // --quick of the benches that take an input (add_quick)
};

}  // namespace vpipe::cli
