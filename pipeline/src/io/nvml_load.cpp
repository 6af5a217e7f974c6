#include "vpipe/pipeline/io/nvml_load.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace vpipe {

namespace {

// The four NVML entry points used, by their documented C signatures
// (nvml.h; nvmlReturn_t is an enum whose success value is 0).
struct Nvml {
  using Init = int (*)();
  using ByPciBusId = int (*)(const char*, void**);
  using Utilization = int (*)(void*, unsigned*, unsigned*);
  Init init = nullptr;
  ByPciBusId by_pci_bus_id = nullptr;
  Utilization decoder_utilization = nullptr;
  std::string why_not;  // empty when loaded and initialized
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml x;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);  // kept for the process
    if (!lib) {
      x.why_not = fmt::format("NVML not loaded ({})", dlerror());
      return x;
    }
    x.init = reinterpret_cast<Nvml::Init>(dlsym(lib, "nvmlInit_v2"));
    x.by_pci_bus_id =
        reinterpret_cast<Nvml::ByPciBusId>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    x.decoder_utilization =
        reinterpret_cast<Nvml::Utilization>(dlsym(lib, "nvmlDeviceGetDecoderUtilization"));
    if (!x.init || !x.by_pci_bus_id || !x.decoder_utilization)
      x.why_not = "NVML lacks the decoder utilisation query";
    else if (const int rc = x.init(); rc != 0)
      x.why_not = fmt::format("nvmlInit failed (NVML error {})", rc);
    return x;
  }();
  return n;
}

// NVML's handle of a CUDA device, matched by PCI bus id (the two number
// devices differently when CUDA_VISIBLE_DEVICES is set).
void* nvml_device(int cuda_device, std::string& why_not) {
  const Nvml& n = nvml();
  if (!n.why_not.empty()) {
    why_not = n.why_not;
    return nullptr;
  }
  std::array<char, 32> bus{};
  if (cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), cuda_device) != cudaSuccess) {
    why_not = fmt::format("CUDA device {} has no PCI bus id", cuda_device);
    return nullptr;
  }
  void* device = nullptr;
  if (const int rc = n.by_pci_bus_id(bus.data(), &device); rc != 0) {
    why_not = fmt::format("NVML does not know device {} (NVML error {})", bus.data(), rc);
    return nullptr;
  }
  return device;
}

}  // namespace

nlohmann::json DecoderLoad::to_json() const {
  if (!available) return {{"available", false}, {"why_not", why_not}};
  return {{"available", true}, {"samples", samples}, {"mean_pct", mean_pct}, {"max_pct", max_pct}};
}

std::optional<double> decoder_load_now(int cuda_device) {
  std::string why_not;
  void* device = nvml_device(cuda_device, why_not);
  unsigned pct = 0, period_us = 0;
  if (!device || nvml().decoder_utilization(device, &pct, &period_us) != 0) return std::nullopt;
  return pct;
}

DecoderLoadSampler::DecoderLoadSampler(int cuda_device, std::chrono::milliseconds period) {
  void* device = nvml_device(cuda_device, load_.why_not);
  if (!device) return;
  load_.available = true;
  thread_ = std::thread([this, device, period] { sample(device, period); });
}

DecoderLoadSampler::~DecoderLoadSampler() { (void)stop(); }

void DecoderLoadSampler::sample(void* device, std::chrono::milliseconds period) {
  double sum = 0;
  while (!stop_.load()) {
    unsigned pct = 0, period_us = 0;
    if (nvml().decoder_utilization(device, &pct, &period_us) == 0) {
      ++load_.samples;
      sum += pct;
      load_.max_pct = std::max(load_.max_pct, static_cast<double>(pct));
      load_.mean_pct = sum / load_.samples;
    }
    std::this_thread::sleep_for(period);
  }
}

DecoderLoad DecoderLoadSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  return load_;
}

}  // namespace vpipe
