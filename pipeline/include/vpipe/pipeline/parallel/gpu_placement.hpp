// Several GPUs in one host (issue #24): which GPUs a run may use (--gpus) and
// where a new stream goes. Both pure: unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace vpipe {

// `--gpus` text → device indices, given how many devices are visible:
//   "all"      every visible device;
//   "N"        the first N devices (a count);
//   "0,2", "1," the listed devices (a comma makes it a list: "1," is device 1).
// Throws usage_error "TEXT: the problem" (no device, an index not visible, a
// duplicate, a count of 0); the caller puts the option's name before it.
[[nodiscard]] std::vector<int> parse_gpus(std::string_view text, int visible);

// What a GPU carries now.
struct GpuLoad {
  int device = 0;
  int streams = 0;                // streams placed on it
  int engines = 1;                // decode engines (the same number for every GPU when unknown)
  std::size_t memory_used = 0;    // bytes its strategy holds
  std::size_t memory_budget = 0;  // bytes it may hold (0: the GPU is out of service)
  double fps_per_stream = 0;      // measured, 0 when not yet known
};

// The GPU with the most headroom for one more stream: the smaller of its free
// share of decode engines (streams against engines) and of memory (used
// against budget); ties go to the higher measured fps per stream, then to the
// lower index. GPUs out of service (budget 0) are never chosen. Returns an
// index into `gpus`; throws input_error when none can take a stream.
[[nodiscard]] std::size_t place_stream(const std::vector<GpuLoad>& gpus);

// A stream on gpus[failed] failed there (--on-gpu-error move): that GPU goes out of service
// (budget 0; its other streams stay where they are, each moving when it fails itself), this
// stream leaves it, and it goes where place_stream says. Returns the new index (its streams
// counted), or nothing when no other GPU can take it.
[[nodiscard]] std::optional<std::size_t> move_stream(std::vector<GpuLoad>& gpus,
                                                     std::size_t failed);

// The GPUs of a run and what each carries, for streams that start, fail and leave at
// any time (`transcode --streams`, `vpipe run`): place_stream and move_stream over one
// table, under a lock. Pure bookkeeping: the caller makes the device current.
class GpuPlacer {
 public:
  explicit GpuPlacer(std::vector<GpuLoad> gpus) : gpus_(std::move(gpus)) {}
  [[nodiscard]] bool empty() const { return gpus_.empty(); }
  // The device a new stream goes to (counted there); throws input_error when none can take it.
  [[nodiscard]] int place();
  void release(int device);  // a stream left `device`
  // A stream failed with a CUDA error on `device`: move_stream; the device it goes to.
  [[nodiscard]] std::optional<int> move_from(int device);
  [[nodiscard]] std::vector<GpuLoad> loads() const;

 private:
  [[nodiscard]] std::size_t index_of(int device) const;  // throws logic_error for a stranger
  mutable std::mutex mutex_;
  std::vector<GpuLoad> gpus_;
};

}  // namespace vpipe
