#include "vpipe/pipeline/io/paths.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/run_files.hpp"

namespace vpipe {

namespace fs = std::filesystem;

void check_writable(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      throw usage_error(fmt::format("cannot open {} '{}': it is a folder", what, path));
    if (::access(path.c_str(), W_OK) != 0)
      throw input_error(fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)));
    std::error_code ec;  // a file is written beside itself, then renamed: its folder must allow it
    const fs::path folder = fs::canonical(path, ec).parent_path();
    if (S_ISREG(st.st_mode) && !ec && ::access(folder.c_str(), W_OK | X_OK) != 0)
      throw input_error(fmt::format(
          "cannot write {} '{}' whole: vpipe writes beside it and renames, and the folder '{}' "
          "does not let it ({}); the file is untouched",
          what, path, folder.string(), std::strerror(errno)));
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
  RunFiles files;
  files.reads(input, "the input");
  if (output != "null") files.writes(output, "the output");
  files.writes(path, what);
  files.check();
  if (const auto local = local_file(path)) check_writable(*local, what);
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

namespace {
struct LinuxDirent64 {  // getdents64's record (no libc wrapper in glibc 2.36)
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};
// `name` in `parent` removed, a folder with everything in it (a ladder's staging folder),
// with system calls alone: async-signal-safe (no opendir, no allocation). Depth-bounded.
bool remove_now(int parent, const char* name, int depth) noexcept {
  if (::unlinkat(parent, name, 0) == 0) return true;
  if ((errno != EISDIR && errno != EPERM) || depth > 4) return false;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  alignas(8) char buf[4096];
  for (bool removed = true; removed;) {  // from the start again after each pass that removed
    removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (long n; (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
      for (long at = 0; at < n;) {
        const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + at);
        at += d->d_reclen;
        if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
          removed |= remove_now(fd, d->d_name, depth + 1);
      }
  }
  ::close(fd);
  return ::unlinkat(parent, name, AT_REMOVEDIR) == 0;
}
}  // namespace

int remove_partial_outputs_now() noexcept {
  int n = 0;
  for (auto& slot : g_partial) {
    const char* p = slot.exchange(nullptr);
    if (!p) continue;
    ++n;
    const bool gone = remove_now(AT_FDCWD, p, 0);  // a file, or a ladder's staging folder
    say("vpipe: stopped at once (second signal): ");
    say(gone ? "removed the unfinished output '" : "could not remove the unfinished output '");
    say(p);
    say(gone ? "' (keep_partial keeps it)\n" : "'\n");
  }
  return n;
}

std::string final_target(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  std::error_code missing;  // a name that is not there is no error here
  for (int hops = 0; !ec && hops < 40 && fs::is_symlink(fs::symlink_status(p, missing)); ++hops) {
    const fs::path to = fs::read_symlink(p, ec);
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  if (!ec) p = fs::weakly_canonical(p, ec);
  return p.lexically_normal().string();
}

std::string create_staging_file(const std::string& path, const std::string& what) {
  for (int tries = 0; tries < 8; ++tries) {
    std::string name = staging_name(path);
    const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return name;
    }
    if (errno != EEXIST)
      throw input_error(fmt::format("cannot write {}: cannot create a file beside it: {}", what,
                                    std::strerror(errno)));
  }
  throw input_error(fmt::format("cannot write {}: no unused name beside it", what));
}

std::string staging_name(const std::string& path) {
  const fs::path final_path(path);
  static std::atomic<unsigned> serial{0};
  // Random bits too: a name nobody can guess, so nobody can plant a link under it first.
  static thread_local std::mt19937 bits{std::random_device{}()};
  const std::string tag = fmt::format(".vpipe-partial-{}-{}-{:08x}", ::getpid(), ++serial, bits());
  std::string stem = final_path.stem().string(), ext = final_path.extension().string();
  const long limit = ::pathconf(final_path.parent_path().c_str(), _PC_NAME_MAX);
  const std::size_t max = limit > 0 ? static_cast<std::size_t>(limit) : 255;
  if (ext.size() > 32) ext.clear();  // a "name.with.a.long.tail": the tag is enough
  const std::size_t room = max > tag.size() + ext.size() ? max - tag.size() - ext.size() : 1;
  if (stem.size() > room) {
    stem.resize(room);
    while (!stem.empty() && (static_cast<unsigned char>(stem.back()) & 0xC0) == 0x80)
      stem.pop_back();  // not in the middle of a UTF-8 character
    if (!stem.empty() && static_cast<unsigned char>(stem.back()) >= 0xC0) stem.pop_back();
  }
  return (final_path.parent_path() / (stem + tag + ext)).string();
}

StagedOutput::StagedOutput(std::string target, bool keep_partial)
    : target_(std::move(target)), write_url_(ffmpeg_url(target_)), keep_(keep_partial) {
  const auto local = local_file(target_);
  if (!local) return;  // pipe:, URLs: directly
  std::error_code ec;
  const fs::path final_path =
      final_target(*local);  // through a symlink: its target; the link stays
  const auto st = fs::status(final_path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) return;  // a FIFO, a device: directly
  stream_ = false;
  // A file in a folder where nothing new can be made cannot be written whole: refused, since
  // writing it in place would destroy it if the run failed (check_writable says so first).
  if (::access(final_path.parent_path().c_str(), W_OK | X_OK) != 0)
    throw input_error(fmt::format(
        "cannot write output '{}': vpipe writes a file beside it and renames it into place, and "
        "the folder '{}' does not let it ({}); the file is untouched",
        target_, final_path.parent_path().string(), std::strerror(errno)));
  final_ = final_path.string();
  temp_ = create_staging_file(final_path.string(), fmt::format("output '{}'", target_));
  write_url_ = "file:" + temp_;
}

void StagedOutput::opened() {
  opened_ = true;
  if (staged() && !keep_) {
    register_partial_output(temp_);
    registered_ = true;
  }
}

void StagedOutput::commit() {
  done_ = true;
  if (std::exchange(registered_, false)) unregister_partial_output(temp_);
  std::error_code ec;
  if (!staged()) return;
  if (!opened_) {  // made, never written: not an output
    fs::remove(temp_, ec);
    return;
  }
  if (const auto old = fs::status(final_, ec); fs::is_regular_file(old))
    fs::permissions(temp_, old.permissions(), ec);  // the user's file keeps its mode
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    done_ = false;  // the destructor removes (or keeps) the temporary file
    throw input_error(
        fmt::format("cannot put the finished output in place of '{}': {}", target_, why));
  }
}

StagedOutput::~StagedOutput() {
  if (registered_) unregister_partial_output(temp_);
  if (!staged() || done_) return;
  if (keep_ && opened_) {
    spdlog::warn("{}: unfinished; kept as '{}' (keep_partial){}", target_, temp_,
                 fs::exists(final_) ? "; the file already there is untouched" : "");
    return;
  }
  std::error_code ec;
  fs::remove(temp_, ec);
}

void write_file(const std::string& path, std::string_view text, const std::string& what) {
  StagedOutput out(path, false);
  std::string file = out.write_url();
  if (file.rfind("file:", 0) == 0) file.erase(0, 5);
  {
    std::ofstream f(file, std::ios::binary);
    if (f) out.opened();
    f << text;
    f.close();
    if (!f)
      throw input_error(fmt::format("cannot write {} '{}': {}", what, path, std::strerror(errno)));
  }
  out.commit();
}

void remove_with_siblings(const std::string& path,
                          const std::function<bool(const std::string&)>& named) noexcept {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  const std::string_view in_progress = ".tmp";
  fs::remove(path, ec);
  fs::remove(path + std::string(in_progress), ec);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() > in_progress.size() && name.ends_with(in_progress))
      name.resize(name.size() - in_progress.size());
    std::error_code ignored;
    if (named(name)) fs::remove(it->path(), ignored);
  }
  if (fs::is_empty(dir, ec) && !ec) fs::remove(dir, ec);
}

}  // namespace vpipe
