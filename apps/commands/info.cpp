// vpipe info: the CUDA devices, NVDEC/NVENC through FFmpeg, library versions.
#include <fmt/format.h>

extern "C" {
#include <libavcodec/version.h>
#include <libavformat/version.h>
#include <libavutil/macros.h>
}
#include <opencv2/core/version.hpp>

#include "commands/command.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/pipeline/io/hw_probe.hpp"

namespace vpipe::cli {
namespace {

int run_info() {
  const auto cuda = vpipe::query_cuda_system();
  fmt::print("vpipe {}\n", "0.1.0");
  fmt::print("CUDA runtime (built with): {}\n", vpipe::cuda_version_string(cuda.runtime_version));
  fmt::print("CUDA driver: {}\n", cuda.driver_version
                                      ? vpipe::cuda_version_string(cuda.driver_version)
                                      : std::string("none"));
  if (cuda.devices.empty()) {
    fmt::print("CUDA devices: none ({}); vpipe runs the CPU path\n", cuda.unavailable_reason);
  }
  for (const auto& d : cuda.devices) {
    fmt::print(
        "CUDA device {}: {}, compute {}.{}, {} SMs, {:.1f} GiB ({:.1f} GiB free), memory pools: "
        "{}\n",
        d.index, d.name, d.cc_major, d.cc_minor, d.multiprocessors,
        static_cast<double>(d.total_memory) / (1 << 30),
        static_cast<double>(d.free_memory) / (1 << 30), d.memory_pools ? "yes" : "no");
  }
  const auto hw = vpipe::probe_hw_codecs();
  fmt::print("FFmpeg CUDA hwaccel: {} ({})\n", hw.cuda_hwdevice ? "yes" : "no", hw.cuda_detail);
  fmt::print("NVDEC through FFmpeg: {} ({})\n", hw.nvdec ? "usable" : "not usable",
             hw.nvdec_detail);
  fmt::print("NVENC through FFmpeg: {} ({})\n", hw.nvenc ? "usable" : "not usable",
             hw.nvenc_detail);
  fmt::print("Encoder for transcode: {}\n",
             hw.nvenc ? "h264_nvenc (--encoder auto picks it; --encoder libx264 for x264)"
                      : "libx264 (--encoder auto: no usable NVENC here)");
  fmt::print("Decoder for transcode: {}\n",
             hw.nvdec ? "NVDEC when the chain starts with a CUDA filter (--decode auto)"
                      : "libavcodec on the CPU (NVDEC not usable)");
  fmt::print("FFmpeg: libavformat {}, libavcodec {}\n", AV_STRINGIFY(LIBAVFORMAT_VERSION),
             AV_STRINGIFY(LIBAVCODEC_VERSION));
  fmt::print("OpenCV: {}\n", CV_VERSION);
  return 0;
}

class InfoCommand final : public Command {
 public:
  CLI::App* add(CLI::App& parent) override {
    return parent.add_subcommand(
        "info", "show CUDA devices, NVDEC/NVENC availability and library versions");
  }
  int run() override { return run_info(); }
};

}  // namespace

std::unique_ptr<Command> make_info_command() { return std::make_unique<InfoCommand>(); }

}  // namespace vpipe::cli
