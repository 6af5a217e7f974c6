#include "vpipe/pipeline/graph/thread_waker.hpp"

#include <csignal>

namespace vpipe {

void ThreadWaker::enter() {
  std::lock_guard lock(mutex_);
  thread_ = pthread_self();
}

void ThreadWaker::leave() noexcept {
  std::lock_guard lock(mutex_);
  thread_.reset();
}

void ThreadWaker::wake() noexcept {
  struct sigaction current {};
  if (sigaction(SIGURG, nullptr, &current) != 0 || current.sa_handler == SIG_DFL ||
      current.sa_handler == SIG_IGN)
    return;
  std::lock_guard lock(mutex_);
  if (thread_) pthread_kill(*thread_, SIGURG);
}

}  // namespace vpipe
