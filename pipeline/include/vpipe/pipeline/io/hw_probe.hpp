// Probes whether NVDEC and NVENC are usable through FFmpeg on this machine,
// by using them: a tiny H.264 stream is encoded with libx264 and decoded
// through the `cuda` hwaccel; h264_nvenc is opened on a small frame.
#pragma once

#include <string>

namespace vpipe {

struct HwCodecProbe {
  bool cuda_hwdevice = false;  // av_hwdevice_ctx_create(CUDA) worked
  bool nvdec = false;          // decoded frames came back as AV_PIX_FMT_CUDA
  bool nvenc = false;          // h264_nvenc opened
  std::string cuda_detail, nvdec_detail, nvenc_detail;
};

[[nodiscard]] HwCodecProbe probe_hw_codecs();

// Opens h264_nvenc on a small frame: {usable, why (or "h264_nvenc opened")}.
struct NvencProbe {
  bool usable = false;
  std::string detail;
};
[[nodiscard]] NvencProbe probe_nvenc();

}  // namespace vpipe
