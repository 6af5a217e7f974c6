#pragma once

#include <pthread.h>

#include <mutex>
#include <optional>

namespace vpipe {

// A stage's thread, while it runs, so that Ctrl-C can break a read or a write
// blocked in the kernel (a FIFO or pipe whose other end went quiet, a stalled
// disk): wake() sends it SIGURG, for which the program installs a handler
// without SA_RESTART, so the call returns EINTR and the FFmpeg I/O context's
// interrupt callback ends it. Safe from any thread; does nothing when no
// handler is installed (SIGURG would be ignored, breaking nothing).
class ThreadWaker {
 public:
  void enter();           // on the stage's thread (Stage::open)
  void leave() noexcept;  // Stage::close: the thread is never signalled again
  void wake() noexcept;

 private:
  std::mutex mutex_;
  std::optional<pthread_t> thread_;
};

}  // namespace vpipe
