// Rules for the files vpipe writes, checked before any work starts: vpipe
// never writes to its input, never loses an output it was not asked to
// replace, and says before a two-hour run, not after it, that a path is bad.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vpipe {

// Throws input_error unless `path` can be written: an existing regular file
// (or a symlink to one) we may write, or a new name in a writable directory.
// Creates nothing and truncates nothing. `what` names the option ("--report").
void check_writable(const std::string& path, const std::string& what);

// A run of one input, one output and one side file (a report, a benchmark's
// JSON): RunFiles' check over the three (usage_error), then check_writable.
// "-" is the standard output: refused only when the output goes there too.
void check_side_file(const std::string& path, const std::string& what, const std::string& input,
                     const std::string& output);

// Creates `dir` (and its parents) and proves a file can be written there
// (input_error otherwise).
void check_writable_dir(const std::string& dir, const std::string& what);

// The output files being written, which a second Ctrl-C (the user will not
// wait for the output to be finalized) removes: a file without its index
// (an MP4's moov) does not play. Written by the transcode; read by a signal
// handler through remove_partial_outputs_now(), which is async-signal-safe:
// unlink(2) and write(2) only, one line on stderr per file.
void register_partial_output(const std::string& path);
void unregister_partial_output(const std::string& path);
int remove_partial_outputs_now() noexcept;  // how many were registered

// A file output written beside its target and renamed over it only once it is
// complete, so a run that fails, is interrupted twice or is killed never destroys
// a file already at the output path (issue #40). Staged: a plain path or "file:P"
// naming a regular file or a new name; through a symlink, the link's final target
// is replaced and the link stays. Written directly: FIFOs, devices, pipe:, URLs.
// A file in a folder where no new file can be made is refused (input_error):
// written in place, a failed run would destroy it. The temporary name,
// NAME.vpipe-partial-PID-N.EXT, is unique per output and fits NAME_MAX.
// Unfinished, the temporary file is removed, or kept under its own name with
// keep_partial (and a warning naming it).
class StagedOutput {
 public:
  StagedOutput() = default;
  StagedOutput(std::string target, bool keep_partial);
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;
  ~StagedOutput();

  // What to open for writing: the temporary file, or the target itself.
  [[nodiscard]] const std::string& write_url() const { return write_url_; }
  [[nodiscard]] bool staged() const { return !temp_.empty(); }
  // Written directly to something that is not a regular file (a FIFO, a
  // device, pipe:, a URL): a stream, with nothing to finalize.
  [[nodiscard]] bool stream() const { return stream_; }
  void opened();  // the file exists from now on (a second Ctrl-C removes an unfinished one)
  // Complete and closed: rename over the target (keeping an old file's permissions).
  void commit();

 private:
  std::string target_;     // as the user named it (messages)
  std::string temp_;       // beside the file it replaces; empty when written directly
  std::string final_;      // the file it replaces: symlinks followed
  std::string write_url_;  // "file:" + temp_ (a colon in a name is no protocol), or target_
  bool keep_ = false;
  bool stream_ = true;
  bool opened_ = false;
  bool registered_ = false;
  bool done_ = false;
};

// Where writing `path` (a local name) puts the bytes: absolute, symlinks followed to
// their final target, dangling ones too (writing through one creates its target).
// The one resolution StagedOutput, RunFiles and the encoder's side files use.
[[nodiscard]] std::string final_target(const std::string& path);

// The name a file is written under beside `path` until it is whole:
// "NAME.vpipe-partial-PID-N.EXT", unique per output (not per process: fleet streams,
// several outputs), cut to fit the file system's name limit.
[[nodiscard]] std::string staging_name(const std::string& path);
// A staging_name() made as a new, empty file of this process's (O_EXCL, no link followed),
// so that whoever writes it next (FFmpeg, an encoder) writes this very file: a name someone
// planted a link under is never used. Throws input_error naming `what`.
[[nodiscard]] std::string create_staging_file(const std::string& path, const std::string& what);

// Writes `text` to `path` the way StagedOutput writes a video: beside it,
// then renamed over it, so a report, a benchmark's JSON or a soak's page is
// whole or not there, and an old one survives a failed write. Throws
// input_error naming `what` and the path.
void write_file(const std::string& path, std::string_view text, const std::string& what);

// `path` and the files beside it whose names `named` accepts removed, then the
// folder if that left it empty (a failed ladder rendition's index and
// segments). A file's in-progress copy, NAME.tmp (the HLS and DASH muxers
// write a segment there and rename it when the segment ends), goes with the
// file NAME would have been. Nothing else is touched. Never throws.
void remove_with_siblings(const std::string& path,
                          const std::function<bool(const std::string&)>& named) noexcept;

}  // namespace vpipe
