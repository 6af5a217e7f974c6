// vpipe bench: the group the benches sit under (bench_*.cpp here).
#include "commands/command.hpp"

namespace vpipe::cli {

std::unique_ptr<Command> make_bench_command() {
  return std::make_unique<Group>("bench", "measure vpipe on this machine (needs a CUDA device)");
}

}  // namespace vpipe::cli
