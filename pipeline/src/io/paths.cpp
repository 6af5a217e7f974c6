#include "vpipe/pipeline/io/paths.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
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
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "vpipe/memory/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {
// FFmpeg's protocol name at the start of `url` ("file", "cache", "subfile", "concat", …:
// letters, digits, '_', '+', '-', '.' and ',' up to the first ':'), or empty.
std::string protocol_of(const std::string& url) {
  const auto colon = url.find(':');
  if (colon == std::string::npos || colon == 0) return {};
  for (std::size_t i = 0; i < colon; ++i) {
    const char c = url[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '+' && c != '-' &&
        c != '.' && c != ',')
      return {};
  }
  return url.substr(0, colon);
}

void collect_local(const std::string& url, std::vector<std::string>& out, int depth) {
  if (url.empty() || url == "-" || depth > 8) return;  // "-": stdin or stdout (ffmpeg_url)
  // "a:b.mp4": a protocol FFmpeg does not have is a local file's name (ffmpeg_url).
  const std::string proto = ffmpeg_url(url) == url ? protocol_of(url) : std::string();
  const std::string rest = proto.empty() ? url : url.substr(proto.size() + 1);
  if (proto.empty()) {
    out.push_back(url);
  } else if (proto == "file") {
    out.push_back(rest);  // "file:a.mp4", "file:///tmp/a.mp4" (FFmpeg keeps the slashes)
  } else if (proto == "cache" || proto == "async" || proto == "crypto") {
    collect_local(rest, out, depth + 1);
  } else if (proto.rfind("subfile", 0) == 0) {
    collect_local(rest, out, depth + 1);  // "subfile,,start,0,end,0,,:PATH"
  } else if (proto == "concat") {
    std::size_t from = 0;
    for (std::size_t bar; (bar = rest.find('|', from)) != std::string::npos; from = bar + 1)
      collect_local(rest.substr(from, bar - from), out, depth + 1);
    collect_local(rest.substr(from), out, depth + 1);
  }
  // Other protocols (pipe:, fd:, udp://, http://, …) name no local file.
}

// (device, inode) of an existing file, through symlinks.
std::optional<std::pair<dev_t, ino_t>> identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair{st.st_dev, st.st_ino};
}
// Where a path that does not exist (yet) will be: absolute, dangling symlinks followed
// (writing through one creates its target), then symlinks in what exists resolved.
fs::path where_it_will_be(const std::string& path, std::error_code& ec) {
  fs::path p = fs::absolute(path, ec);
  std::error_code missing;  // a name that is not there is no error here
  for (int hops = 0; !ec && hops < 40 && fs::is_symlink(fs::symlink_status(p, missing)); ++hops) {
    const fs::path target = fs::read_symlink(p, ec);
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return ec ? p : fs::weakly_canonical(p, ec);
}
}  // namespace

std::vector<std::string> local_files_of(const std::string& url) {
  std::vector<std::string> out;
  collect_local(url, out, 0);
  return out;
}

bool same_file(const std::string& a, const std::string& b) {
  for (const auto& x : local_files_of(a))
    for (const auto& y : local_files_of(b)) {
      const auto ix = identity(x), iy = identity(y);
      if (ix && iy) {
        if (*ix == *iy) return true;
        continue;
      }
      // Not both there yet: the same absolute path, symlinks resolved as far as they exist.
      std::error_code ea, eb;
      const auto ca = where_it_will_be(x, ea);
      const auto cb = where_it_will_be(y, eb);
      if (!ea && !eb && ca == cb) return true;
    }
  return false;
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
  if (path == "-") {  // the standard output: free unless the video goes there
    if (is_stdout(output))
      throw usage_error(fmt::format(
          "{} -: the video goes to the standard output ({}); give {} a file", what, output, what));
    return;
  }
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
    say(gone ? "' (keep_partial keeps it)\n" : "'\n");
  }
  return n;
}

StagedOutput::StagedOutput(std::string target, bool keep_partial)
    : target_(std::move(target)), write_url_(ffmpeg_url(target_)), keep_(keep_partial) {
  const std::string proto = protocol_of(write_url_);
  const auto local = local_files_of(target_);
  if ((!proto.empty() && proto != "file") || local.size() != 1) return;  // pipe:, URLs: directly
  std::error_code ec;
  const fs::path final_path = where_it_will_be(local[0], ec);
  if (ec) return;
  const auto st = fs::status(final_path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) return;  // a FIFO, a device: directly
  stream_ = false;
  // A writable file in a folder the user cannot create files in: there is
  // nowhere to stage, so it is written in place, as before staging existed.
  if (fs::exists(st) && ::access(final_path.parent_path().c_str(), W_OK) != 0) {
    write_url_ = "file:" + final_path.string();  // a colon in a name is no protocol
    return;
  }
  final_ = final_path.string();
  temp_ =
      (final_path.parent_path() / fmt::format("{}.vpipe-partial-{}{}", final_path.stem().string(),
                                              ::getpid(), final_path.extension().string()))
          .string();
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
  if (!staged() || !opened_) return;
  std::error_code ec;
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
  if (!staged() || !opened_ || done_) return;
  if (keep_) {
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
