// NVDEC's utilisation, read from NVML while a measurement runs. NVML is
// loaded at run time (libnvidia-ml.so.1, part of the driver), so vpipe runs
// and builds where it is missing; the summary then says why there is none.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace vpipe {

struct DecoderLoad {
  bool available = false;
  std::string why_not;  // when not available: what was missing
  int samples = 0;
  double mean_pct = 0, max_pct = 0;  // NVML's decoder utilisation, all engines together
  [[nodiscard]] nlohmann::json to_json() const;
};

// NVML's decoder utilisation of a CUDA device now (its last sampling
// period), or nullopt where NVML is missing.
[[nodiscard]] std::optional<double> decoder_load_now(int cuda_device);

// Samples the decoder utilisation of one CUDA device every `period` from
// construction until stop() (or destruction).
class DecoderLoadSampler {
 public:
  explicit DecoderLoadSampler(int cuda_device,
                              std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~DecoderLoadSampler();
  DecoderLoadSampler(const DecoderLoadSampler&) = delete;
  DecoderLoadSampler& operator=(const DecoderLoadSampler&) = delete;
  DecoderLoad stop();

 private:
  void sample(void* device, std::chrono::milliseconds period);
  DecoderLoad load_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: joined before the summary goes
};

}  // namespace vpipe
