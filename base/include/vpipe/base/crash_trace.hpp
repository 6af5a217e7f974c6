// A crash says where it was: install_crash_trace() makes a fatal signal
// (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) print the signal and the stack
// (Boost.Stacktrace) on stderr before the process dies of it, so a crash on a
// machine nobody can attach a debugger to still names its function. Each
// vpipe program calls it first thing in main().
//
// The handler runs on its own stack (a stack overflow is a SIGSEGV too), prints
// once, restores the default action and raises the signal again: the exit
// status and a core file stay what they would have been.
#pragma once

namespace vpipe {

// `program` names the process in the first line ("vpipe: fatal signal …").
void install_crash_trace(const char* program) noexcept;

// The text the handler prints, for a test: the signal's line and the frames.
[[nodiscard]] const char* crash_trace_signal_name(int sig) noexcept;

}  // namespace vpipe
