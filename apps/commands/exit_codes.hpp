// vpipe's exit statuses: the one table that main returns by, `vpipe --help`
// prints and docs/GUIDE.md repeats (tests/e2e/exit_codes_test.cpp checks both,
// and makes every row happen).
#pragma once

#include <fmt/format.h>

#include <string>

namespace vpipe::cli {

enum ExitCode : int {
  kDone = 0,
  kFailed = 1,
  kUsage = 2,
  kVerdictFailed = 3,
  kCompletedWithErrors = 4,
};

struct ExitRow {
  int code;
  const char* meaning;
};

inline constexpr ExitRow kExitCodes[] = {
    {kDone, "done"},
    {kFailed,
     "failed: the input, the output, the device or a codec (one line names the file and the "
     "cause; the file already at the output path is kept)"},
    {kUsage,
     "usage: an unknown name or a bad value on the command line or in the config, caught before "
     "any work"},
    {kVerdictFailed, "soak: the verdict failed (the table says which check)"},
    {kCompletedWithErrors,
     "completed with errors: damaged input, every frame that decoded is in a playable output "
     "(the report counts the rest)"},
    {129, "SIGHUP (a closed terminal): stopped, the output finalized"},
    {130, "SIGINT (Ctrl-C): stopped, the output finalized"},
    {143, "SIGTERM: stopped, the output finalized"},
};

// The table as `vpipe --help` ends: "Exit status:" and one "  N  meaning" line a row.
inline std::string exit_code_help() {
  std::string out = "Exit status:\n";
  for (const auto& row : kExitCodes) out += fmt::format("  {:>3}  {}\n", row.code, row.meaning);
  return out;
}

}  // namespace vpipe::cli
