#include "vpipe/pipeline/io/run_files.hpp"

#include <fmt/format.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {

using Id = std::pair<unsigned long, unsigned long>;

// (device, inode) of what a stat says, but a device (/dev/null): two roles may share it.
std::optional<Id> id_of(const struct stat& st) {
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return std::nullopt;
  return Id{st.st_dev, st.st_ino};
}
std::optional<Id> identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return id_of(st);
}
// What the standard input or output is (a file: `vpipe transcode - in.ts < in.ts`).
std::optional<Id> identity(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return id_of(st);
}

bool inside(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.size() <= dir.size()) return false;
  return path.compare(0, dir.size(), dir) == 0 && (dir.back() == '/' || path[dir.size()] == '/');
}

// The (device, inode) of every file already in `dir`: a hard link to the input
// inside a ladder's folder is the input too. Bounded: a ladder is small.
std::set<std::pair<unsigned long, unsigned long>> ids_in(const std::string& dir) {
  std::set<std::pair<unsigned long, unsigned long>> out;
  std::error_code ec;
  int n = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end && n < 20000;
       it.increment(ec), ++n)
    if (const auto id = identity(it->path().string())) out.insert(*id);
  return out;
}

bool reads_stdin(const std::string& url) {
  return url == "-" || url == "pipe:" || url == "pipe:0" || url == "fd:0";
}

}  // namespace

std::vector<std::string> files_of_pattern(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::exists(path, ec)) return out;  // a file of that name: itself
  const fs::path p(path);
  const std::string name = p.filename().string();
  std::regex pattern;
  if (static const std::regex printf_d("%0?[0-9]*d"); std::regex_search(name, printf_d)) {
    std::string re;  // image2's sequence: "seq%03d.png" reads seq000.png, seq001.png…
    for (std::size_t i = 0; i < name.size(); ++i) {
      std::smatch m;
      const std::string rest = name.substr(i);
      if (std::regex_search(rest, m, printf_d, std::regex_constants::match_continuous)) {
        // %0Nd prints a number zero-padded to N digits, or longer with no leading zero
        // (img-%02d.png writes img-07, img-21, img-100, never img-0021).
        std::string digits = m.str(0).substr(1);  // "%d", "%4d", "%04d" → "d", "4d", "04d"
        digits.pop_back();
        const int width = digits.empty() ? 1 : std::max(1, std::stoi(digits));
        re += fmt::format("(?:[0-9]{{{}}}|[1-9][0-9]{{{},}})", width, width);
        i += m.length(0) - 1;
      } else if (name[i] == '%' && i + 1 < name.size() && name[i + 1] == '%') {
        re += "%";
        ++i;
      } else {
        re += std::isalnum(static_cast<unsigned char>(name[i])) ? std::string(1, name[i])
                                                                : "\\" + std::string(1, name[i]);
      }
    }
    pattern = std::regex(re);
  } else if (name.find_first_of("*?[") != std::string::npos) {
    glob_t g{};  // pattern_type=glob
    if (::glob(path.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    return out;
  } else {
    return out;
  }
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  int n = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end && n < 100000;
       it.increment(ec), ++n)
    if (std::regex_match(it->path().filename().string(), pattern))
      out.push_back((p.parent_path() / it->path().filename()).string());
  return out;
}

std::vector<std::string> files_named_by(const std::string& path) {
  std::vector<std::string> out;
  std::vector<std::pair<std::string, int>> todo{{path, 0}};
  std::set<std::string> seen;
  while (!todo.empty()) {
    const auto [file, depth] = todo.back();
    todo.pop_back();
    std::error_code ec;  // only a regular file: a FIFO's first line is the video (and blocks)
    if (depth > 4 || !seen.insert(file).second || !fs::is_regular_file(file, ec)) continue;
    std::ifstream in(file);
    std::string first;
    if (!in || !std::getline(in, first)) continue;
    const bool ffconcat = first.rfind("ffconcat version", 0) == 0;
    const bool m3u8 = first.rfind("#EXTM3U", 0) == 0;
    if (!ffconcat && !m3u8) continue;
    const fs::path dir = fs::path(file).parent_path();
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      std::string name;
      if (ffconcat && line.rfind("file ", 0) == 0) {
        name = line.substr(5);
        if (name.size() >= 2 && name.front() == '\'' && name.back() == '\'')
          name = name.substr(1, name.size() - 2);
      } else if (m3u8 && !line.empty() && line[0] != '#') {
        name = line;
      } else if (const auto uri = line.find("URI=\""); m3u8 && uri != std::string::npos) {
        // #EXT-X-MAP (an fMP4 init segment), #EXT-X-MEDIA (another rendition), #EXT-X-KEY…
        const auto end = line.find('"', uri + 5);
        if (end != std::string::npos) name = line.substr(uri + 5, end - uri - 5);
      }
      if (name.rfind("file://", 0) == 0) name = name.substr(7);  // file:///abs: a local file
      if (name.empty() || name.find("://") != std::string::npos) continue;  // URLs: no file
      const auto local = local_file(name);
      if (!local) {  // "tee:a.mp4", "cache:…": reads() refuses it by name
        out.push_back(name);
        continue;
      }
      const fs::path p = fs::path(*local).is_absolute() ? fs::path(*local) : dir / *local;
      out.push_back(p.string());
      if (depth < 4) todo.emplace_back(p.string(), depth + 1);
    }
  }
  return out;
}

void RunFiles::add(const std::string& name, std::string what, Kind kind) {
  Entry e{name, std::move(what), kind};
  e.stdio = kind == Kind::kRead ? reads_stdin(name) : is_stdout(name);
  if (e.stdio) e.id = identity(kind == Kind::kRead ? STDIN_FILENO : STDOUT_FILENO);
  if (const auto path = local_file(name)) {
    e.id = identity(*path);
    e.where = final_target(*path);
  }
  entries_.push_back(std::move(e));
}

void RunFiles::reads(const std::string& url, std::string what) {
  if (url.empty()) return;
  check_protocol(url, Direction::kRead, what);
  add(url, what, Kind::kRead);
  const auto path = local_file(url);
  if (!path) return;
  for (const auto& named : files_named_by(*path)) {
    const std::string by = fmt::format("a file {} '{}' names", what, url);
    check_protocol(named, Direction::kRead, by);
    add(named, by, Kind::kRead);
  }
  for (const auto& each : files_of_pattern(*path))  // an image sequence: every picture it reads
    add(each, fmt::format("a picture of {} '{}'", what, url), Kind::kRead);
}

void RunFiles::writes(const std::string& url, std::string what) {
  if (url.empty() || url == "null") return;
  check_protocol(url, Direction::kWrite, what);
  add(url, what, Kind::kWrite);
  // A numbered picture sequence (img-%04d.png) writes over the pictures of its name there are.
  const auto path = local_file(url);
  if (path && path->find('%') != std::string::npos)
    for (const auto& each : files_of_pattern(*path))
      add(each, fmt::format("a picture of {} '{}'", what, url), Kind::kWrite);
}

void RunFiles::writes_tree(const std::string& dir, std::string what) {
  if (dir.empty()) return;
  if (!local_file(dir))
    throw usage_error(fmt::format("{} '{}': a ladder is written into a local folder", what, dir));
  add(dir, std::move(what), Kind::kTree);
}

namespace {

std::string role(const RunFiles::Entry& e) { return fmt::format("{} '{}'", e.what, e.name); }

// Why `a` and `b` cannot both be: empty when they can.
std::string conflict(const RunFiles::Entry& a, const RunFiles::Entry& b) {
  using Kind = RunFiles::Kind;
  if (a.kind == Kind::kRead && b.kind == Kind::kRead) return {};
  if (a.stdio && b.stdio && a.kind == b.kind)
    return fmt::format("{} and {} both go to the standard output: give one a file", role(a),
                       role(b));
  const bool same_id = a.id && b.id && *a.id == *b.id;  // a path or the standard input/output
  if ((a.where.empty() || b.where.empty()) && !same_id) return {};
  const bool same = same_id || (!a.where.empty() && a.where == b.where);
  const RunFiles::Entry* tree = a.kind == Kind::kTree ? &a : b.kind == Kind::kTree ? &b : nullptr;
  const RunFiles::Entry& other = tree == &a ? b : a;
  if (tree && !other.where.empty() &&
      (same || inside(other.where, tree->where) || inside(tree->where, other.where) ||
       (other.id && tree->id && ids_in(tree->where).count(*other.id))))
    return fmt::format(
        "{} would hold {}: a ladder's folder is written whole; give {} another "
        "place",
        role(*tree), role(other), other.kind == Kind::kTree ? "one" : "it");
  if (!same) return {};
  if (a.kind == Kind::kRead || b.kind == Kind::kRead) {
    const auto& r = a.kind == Kind::kRead ? a : b;
    const auto& w = a.kind == Kind::kRead ? b : a;
    return fmt::format("{} is {}: vpipe never writes to what it reads", role(w), role(r));
  }
  return fmt::format("{} and {} are one file: give each its own name", role(a), role(b));
}

}  // namespace

void RunFiles::check() const {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    for (std::size_t j = i + 1; j < entries_.size(); ++j)
      if (const auto why = conflict(entries_[i], entries_[j]); !why.empty()) throw usage_error(why);
}

}  // namespace vpipe
