#include "vpipe/base/errors.hpp"

#include <fmt/format.h>

namespace vpipe::detail {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  // Clear the (non-sticky) error so later calls on this thread start clean.
  (void)cudaGetLastError();
  auto what = fmt::format("{} failed: {} ({}) at {}:{}", call, cudaGetErrorString(code),
                          cudaGetErrorName(code), file, line);
  if (code == cudaErrorMemoryAllocation) throw out_of_memory(what);
  throw cuda_error(code, what);
}

void throw_logic_error(const char* cond, const std::string& msg, const char* file, int line) {
  throw logic_error(fmt::format("{} (expected {} at {}:{})", msg, cond, file, line));
}

}  // namespace vpipe::detail
