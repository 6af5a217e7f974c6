// Every vpipe error type, in one place, and the checking macros.
//
// cuda_error carries the cudaError_t; out_of_memory is thrown for
// cudaErrorMemoryAllocation only (callers may trim and retry on it, never on
// other CUDA errors). VPIPE_CUDA_TRY evaluates its call exactly once.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace vpipe {

// A broken precondition or a misuse of an API: the caller's bug or bad input.
class logic_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// Allocation failed for lack of memory (real, or a budget adaptor's limit).
class out_of_memory : public cuda_error {
 public:
  explicit out_of_memory(const std::string& what) : cuda_error(cudaErrorMemoryAllocation, what) {}
};

// An FFmpeg call failed; averror() is its AVERROR code.
class ffmpeg_error : public std::runtime_error {
 public:
  ffmpeg_error(int averror, const std::string& what)
      : std::runtime_error(what), averror_(averror) {}
  [[nodiscard]] int averror() const noexcept { return averror_; }

 private:
  int averror_;
};

// Bad user input (a file, an option value): the message names the file or
// the value and the cause, and is meant for the user as is.
class input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad option value (a malformed size, a budget of 0, a key=value without
// the '='): the user's command line is wrong. The program exits 2 ("usage").
class usage_error : public input_error {
 public:
  using input_error::input_error;
};

// Bad --vf text or parameters: the message is meant for the user as is.
class chain_error : public logic_error {
 public:
  using logic_error::logic_error;
};

// A filter's configure() can't accept the input format. The chain builder
// may insert a format conversion and try again.
class not_negotiated : public logic_error {
 public:
  using logic_error::logic_error;
};

// (transcode_failed, which carries the report of the failed run, is declared
// beside TranscodeReport in vpipe/pipeline/session/transcode.hpp.)

namespace detail {
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_logic_error(const char* cond, const std::string& msg, const char* file,
                                    int line);
}  // namespace detail

}  // namespace vpipe

#define VPIPE_CUDA_TRY(call)                                                            \
  do {                                                                                  \
    const cudaError_t vpipe_cuda_status_ = (call);                                      \
    if (vpipe_cuda_status_ != cudaSuccess)                                              \
      ::vpipe::detail::throw_cuda_error(vpipe_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define VPIPE_EXPECTS(cond, msg)                                                       \
  do {                                                                                 \
    if (!(cond)) ::vpipe::detail::throw_logic_error(#cond, (msg), __FILE__, __LINE__); \
  } while (0)
