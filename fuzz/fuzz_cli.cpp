// Fuzzes vpipe's command line: the input's lines are the arguments, parsed
// with exactly vpipe's commands and options (apps/commands/), then converted
// (durations, sizes, byte counts). Nothing runs. A parse error or an
// input_error is the expected answer to junk.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "commands/cli.hpp"
#include "vpipe/base/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 2048) return 0;
  std::vector<std::string> args;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(in, line) && args.size() < 40;) args.push_back(line);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  vpipe::cli::Cli cli;
  try {
    cli.app.parse(reversed);
    cli.finish();
  } catch (const CLI::ParseError&) {
  } catch (const vpipe::input_error&) {
  }
  return 0;
}
