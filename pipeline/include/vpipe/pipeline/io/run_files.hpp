// The files a run touches, declared before anything opens, and the one check
// over them: nothing written is read, nothing is written twice, and no folder
// a run writes whole (a ladder) holds another role's file.
//
// Every front end builds one: `vpipe transcode` (its input, outputs, ladder,
// --report, the encoders' side files), each stream of `vpipe run` and
// --streams, soak and the benches (--out, --json), Python's transcode() and
// Encoder. The roles are named as the user wrote them, so a refusal is one
// line that names both: "--report a.json: that is output 2 (a.json)".
//
// Identity: (device, inode) for what exists, through symlinks and hard links;
// for what does not exist yet, the absolute path with the symlinks of what
// exists resolved. A name is first checked against the protocol table
// (protocols.hpp): a meta-protocol (tee:, md5:, concat:…) is refused, so
// no file is written or read that this list does not name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vpipe {

class RunFiles {
 public:
  // An input URL; for a local ffconcat script or HLS playlist, the files it names too.
  void reads(const std::string& url, std::string what);
  // An output URL ("null" writes nothing; "-" is the standard output).
  void writes(const std::string& url, std::string what);
  // A folder the run writes into as a whole (a ladder): nothing else may be in it.
  void writes_tree(const std::string& dir, std::string what);

  // Throws usage_error at the first conflict, naming both roles.
  void check() const;

  enum class Kind { kRead, kWrite, kTree };
  struct Entry {
    std::string name;  // as the user wrote it
    std::string what;  // the role: "input", "--report", "output 2", "stream 'cam1' input"
    Kind kind;
    bool stdio = false;                                         // the standard input or output
    std::optional<std::pair<unsigned long, unsigned long>> id;  // (device, inode) if it exists
    std::string where;  // absolute, symlinks resolved; empty: not a local file (a URL)
  };
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }

 private:
  void add(const std::string& name, std::string what, Kind kind);
  std::vector<Entry> entries_;
};

// The local files an ffconcat script ("ffconcat version 1.0", `file` lines) or an
// HLS playlist (#EXTM3U: its segments and variant playlists) at `path` names,
// relative to its folder; none for anything else. Depth-limited.
[[nodiscard]] std::vector<std::string> files_named_by(const std::string& path);

// The pictures an image-sequence input reads: "seq%03d.png" (image2's numbering) or a glob
// ("seq*.png", pattern_type=glob), from its folder; none for a name that exists as it is.
[[nodiscard]] std::vector<std::string> files_of_pattern(const std::string& path);

}  // namespace vpipe
