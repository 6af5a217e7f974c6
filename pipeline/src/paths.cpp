#include "vpipe/pipeline/paths.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "vpipe/memory/errors.hpp"

namespace vpipe {

namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty() || a.find("://") != std::string::npos ||
      b.find("://") != std::string::npos)
    return false;
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ea, eb;
  const auto ca = fs::weakly_canonical(fs::absolute(a, ea), ea);
  const auto cb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  return !ea && !eb && ca == cb;
}

void check_writable(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw input_error(fmt::format("cannot open {} '{}': it is a folder", what, path));
    if (::access(path.c_str(), W_OK) != 0)
      throw input_error(fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)));
    return;
  }
  const fs::path parent =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw input_error(fmt::format("cannot open {} '{}': the folder '{}' does not exist", what, path,
                                  parent.string()));
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw input_error(fmt::format("cannot open {} '{}': cannot create files in '{}': {}", what,
                                  path, parent.string(), std::strerror(errno)));
}

void check_side_file(const std::string& path, const std::string& what, const std::string& input,
                     const std::string& output) {
  if (path.empty()) return;
  if (same_file(path, input))
    throw usage_error(
        fmt::format("{} {}: that is the input; vpipe never writes to its input", what, path));
  if (output != "null" && same_file(path, output))
    throw usage_error(
        fmt::format("{} {}: that is the output file; give the report its own name", what, path));
  check_writable(path, what);
}

void check_writable_dir(const std::string& dir, const std::string& what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw input_error(fmt::format("cannot create {} '{}': {}", what, dir, ec.message()));
  const std::string probe = (fs::path(dir) / ".vpipe-write-check").string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 && errno != EEXIST)
    throw input_error(fmt::format("cannot write in {} '{}': {}", what, dir, std::strerror(errno)));
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
}

namespace {
std::array<std::atomic<char*>, 512> g_partial{};  // paths (strdup'ed) of the outputs being written
void say(const char* text) noexcept { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }
}  // namespace

void register_partial_output(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  for (auto& slot : g_partial) {
    char* empty = nullptr;
    if (slot.compare_exchange_strong(empty, copy)) return;
  }
  std::free(copy);  // more outputs than slots: that one is only finalized, never removed early
}

void unregister_partial_output(const std::string& path) {
  for (auto& slot : g_partial) {
    char* p = slot.load();
    if (p && path == p && slot.compare_exchange_strong(p, nullptr)) {
      std::free(p);
      return;
    }
  }
}

int remove_partial_outputs_now() noexcept {
  int n = 0;
  for (auto& slot : g_partial) {
    const char* p = slot.exchange(nullptr);
    if (!p) continue;
    ++n;
    const bool gone = ::unlink(p) == 0;
    say("vpipe: stopped at once (second signal): ");
    say(gone ? "removed the unfinished output '" : "could not remove the unfinished output '");
    say(p);
    say(gone ? "' (--keep-partial keeps it)\n" : "'\n");
  }
  return n;
}

}  // namespace vpipe
