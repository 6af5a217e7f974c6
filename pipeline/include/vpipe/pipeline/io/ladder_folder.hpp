// An HLS or DASH ladder committed whole: its renditions and master are written
// into a folder of their own inside the ladder's (DIR/.vpipe-partial-PID-N), and
// moved into DIR only when the run has finished them. A run that fails or is
// interrupted leaves the ladder already in DIR as it was, and removes only the
// folder it made. The ladder is locked while a run writes it (flock on DIR), so
// a second process on one ladder is refused instead of mixing segments.
#pragma once

#include <string>

namespace vpipe {

class LadderFolder {
 public:
  // Creates `target` if needed, locks it and makes the staging folder in it. Throws
  // input_error when it cannot, or when another process holds the lock.
  LadderFolder(std::string target, bool keep_partial);
  LadderFolder(const LadderFolder&) = delete;
  LadderFolder& operator=(const LadderFolder&) = delete;
  ~LadderFolder();  // not committed: the staging folder removed (kept, with a warning, if asked)

  [[nodiscard]] const std::string& staging() const { return staging_; }
  // A path under staging() as it will be once committed (reports name that one).
  [[nodiscard]] std::string final_name(const std::string& staged) const;
  // `text` (a message) with the staging folder's name put back to the ladder's.
  [[nodiscard]] std::string in_final_names(std::string text) const;
  // Every file of the staging folder moved into the target: segments first, then each
  // rendition's playlist or manifest, the master last; then the staging folder removed.
  void commit();

 private:
  std::string target_;
  std::string staging_;
  int lock_fd_ = -1;  // the target folder, flock'ed
  bool keep_ = false;
  bool done_ = false;
  bool registered_ = false;   // a second Ctrl-C removes the staging folder
  bool made_target_ = false;  // this run made the ladder's folder: an unfinished run removes it
};

}  // namespace vpipe
