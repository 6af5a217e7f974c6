#include "vpipe/base/crash_trace.hpp"

#define BOOST_STACKTRACE_LINK  // the backtrace backend, linked: file and line where known
#include <unistd.h>
#include <boost/stacktrace.hpp>

#include <array>
#include <csignal>
#include <cstring>
#include <string>

namespace vpipe {

namespace {

const char* g_program = "vpipe";
constexpr std::array kFatal = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

void say(const char* s) noexcept { (void)!write(STDERR_FILENO, s, std::strlen(s)); }

// Not async-signal-safe past the first line (symbolizing allocates): the
// process is dying anyway, and a trace that may fail beats none.
extern "C" void on_fatal(int sig) {
  say(g_program);
  say(": fatal signal ");
  say(crash_trace_signal_name(sig));
  say(", stack (innermost first):\n");
  const std::string frames = boost::stacktrace::to_string(boost::stacktrace::stacktrace());
  say(frames.c_str());
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

const char* crash_trace_signal_name(int sig) noexcept {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (invalid memory access)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGFPE:
      return "SIGFPE (arithmetic error)";
    case SIGABRT:
      return "SIGABRT (abort)";
    default:
      return "(unknown)";
  }
}

void install_crash_trace(const char* program) noexcept {
  if (program) g_program = program;
  // Its own stack: a stack overflow must still reach the handler.
  static std::array<char, 256 * 1024> alt_stack;
  stack_t ss{};
  ss.ss_sp = alt_stack.data();
  ss.ss_size = alt_stack.size();
  (void)sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (const int sig : kFatal) (void)sigaction(sig, &sa, nullptr);
}

}  // namespace vpipe
