#include "vpipe/pipeline/io/ladder_folder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/paths.hpp"

namespace vpipe {

namespace fs = std::filesystem;

LadderFolder::LadderFolder(std::string target, bool keep_partial)
    : target_(std::move(target)), keep_(keep_partial) {
  std::error_code ec;
  made_target_ = fs::create_directories(target_, ec);
  if (ec)
    throw input_error(
        fmt::format("cannot make the ladder's folder '{}': {}", target_, ec.message()));
  lock_fd_ = ::open(target_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock_fd_ < 0)
    throw input_error(
        fmt::format("cannot open the ladder's folder '{}': {}", target_, std::strerror(errno)));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd_);
    throw input_error(fmt::format(
        "ladder '{}': another vpipe is writing it now; wait for it to finish or give another "
        "folder",
        target_));
  }
  static std::atomic<unsigned> serial{0};
  static thread_local std::mt19937 bits{std::random_device{}()};  // a name nobody can guess
  staging_ =
      (fs::path(target_) / fmt::format(".vpipe-partial-{}-{}-{:08x}", ::getpid(), ++serial, bits()))
          .string();
  if (!fs::create_directory(staging_, ec) || ec) {
    ::close(lock_fd_);
    throw input_error(
        fmt::format("cannot write in the ladder's folder '{}': {}", target_, ec.message()));
  }
  if (!keep_) {  // a second Ctrl-C removes it at once, as it does an unfinished file
    register_partial_output(staging_);
    registered_ = true;
  }
}

LadderFolder::~LadderFolder() {
  if (registered_) unregister_partial_output(staging_);
  if (!done_) {
    std::error_code ec;
    if (keep_)
      spdlog::warn(
          "{}: the ladder is unfinished; what was written is kept in '{}' "
          "(keep_partial); the ladder already there is untouched",
          target_, staging_);
    else
      fs::remove_all(staging_, ec);                              // only what this run made
    if (made_target_ && !keep_) (void)::rmdir(target_.c_str());  // this run's, left empty
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // the lock goes with it
}

std::string LadderFolder::final_name(const std::string& staged) const {
  if (staged.compare(0, staging_.size(), staging_) != 0) return staged;
  return target_ + staged.substr(staging_.size());
}

std::string LadderFolder::in_final_names(std::string text) const {
  for (auto at = text.find(staging_); at != std::string::npos;
       at = text.find(staging_, at + target_.size()))
    text.replace(at, staging_.size(), target_);
  return text;
}

void LadderFolder::commit() {
  struct Move {
    int rank;  // 0 segments, 1 a rendition's playlist or manifest, 2 the master
    fs::path from;
  };
  std::vector<Move> moves;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(staging_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const auto ext = it->path().extension();
    const bool index = ext == ".m3u8" || ext == ".mpd";
    const bool top = it->path().parent_path() == fs::path(staging_);
    moves.push_back({index ? (top ? 2 : 1) : 0, it->path()});
  }
  if (ec)
    throw input_error(
        fmt::format("cannot read the finished ladder in '{}': {}", staging_, ec.message()));
  std::stable_sort(moves.begin(), moves.end(),
                   [](const Move& a, const Move& b) { return a.rank < b.rank; });
  for (const auto& m : moves) {  // each folder on the way a real one: a link leads out of DIR
    const fs::path rel = fs::relative(m.from, staging_);
    fs::path at = target_;
    for (auto part = rel.begin(); std::next(part) != rel.end(); ++part)
      if (at /= *part; fs::is_symlink(fs::symlink_status(at, ec)))
        throw input_error(
            fmt::format("cannot put the finished ladder in place: '{}' is a "
                        "symbolic link, and the ladder stays inside '{}'",
                        at.string(), target_));
  }
  for (const auto& m : moves) {
    const fs::path to = fs::path(target_) / fs::relative(m.from, staging_);
    fs::create_directories(to.parent_path(), ec);
    if (ec || ::rename(m.from.c_str(), to.c_str()) != 0)
      throw input_error(fmt::format("cannot put the finished ladder's '{}' in place: {}",
                                    to.string(), ec ? ec.message() : std::strerror(errno)));
  }
  done_ = true;
  if (std::exchange(registered_, false)) unregister_partial_output(staging_);
  fs::remove_all(staging_, ec);
}

}  // namespace vpipe
