// Built-in filters, overlay: an image or a solid box over the picture. They run on the CPU through
// the references in vpipe::kernels (OpenCV), plane by plane, and on the CUDA path through
// vpipe::kernels' CUDA ops; each class's info() says all the registry knows of it.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstring>
#include <thread>

#include <cmath>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "common.hpp"
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/filters/image_file.hpp"
#include "vpipe/pipeline/filters/stamp.hpp"

namespace vpipe {
namespace {

using namespace builtin;

// ---- overlay ---------------------------------------------------------------

// A picture from a file (a watermark: PNG with alpha) blended over RGB(A)
// frames at (x, y); the parts outside the frame are cut off. The picture is
// read once, and on the CUDA path uploaded once.
class Overlay final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "overlay",
        .summary =
            "Blend a picture from a file (PNG with alpha) over the frame: c = base(1 - a) + "
            "over a, a = alpha/255 x opacity.",
        .params =
            {{"file", ParamType::kString, "", 0, 0, "the picture (anything FFmpeg reads)", {}},
             {"x", ParamType::kInt, "0", 0, 65536, "left edge of the picture", {}},
             {"y", ParamType::kInt, "0", 0, 65536, "top edge of the picture", {}},
             {"opacity", ParamType::kFloat, "1", 0, 1, "0 (invisible) … 1 (its own alpha)", {}}},
        .create =
            [](const ParamValues& p) {
              return std::make_unique<Overlay>(p.get_string("file"), p.get_int("x"), p.get_int("y"),
                                               p.get_float("opacity"));
            },
        .formats = "rgb24 or rgba",
        .cuda = true,
        .example = "format=rgb24,overlay=file=logo.png:x=16:y=16:opacity=0.8"};
  }
  Overlay(std::string file, long long x, long long y, double opacity)
      : file_(std::move(file)),
        x_(static_cast<int>(x)),
        y_(static_cast<int>(y)),
        opacity_(static_cast<float>(opacity)) {}
  // It blends an image over the picture's samples and reads none of another row.
  [[nodiscard]] bool keeps_fields() const override { return true; }
  FrameFormat configure(const FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_RGBA && in.pix_fmt != AV_PIX_FMT_RGB24)
      throw not_negotiated(fmt::format(
          "overlay: cannot take {} (rgb24 or rgba: put format=rgba before it)", to_string(in)));
    if (image_.num_planes == 0) image_ = load_image_rgba(file_);
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    ref::overlay_rgba(in.planes[0], image_.planes[0], out.planes[0], x_, y_, opacity_);
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    if (!device_) upload(ctx.stream);
    cuda::overlay_rgba(in.planes[0], device_view_, out.planes[0], x_, y_, opacity_, ctx.stream);
  }

 private:
  struct CudaFree {
    void operator()(std::uint8_t* p) const noexcept { cudaFree(p); }
  };
  void upload(cudaStream_t stream) {
    const PlaneView& host = image_.planes[0];
    const std::size_t pitch = (host.row_bytes() + 15) / 16 * 16;
    void* p = nullptr;
    VPIPE_CUDA_TRY(cudaMalloc(&p, pitch * static_cast<std::size_t>(host.height)));
    device_.reset(static_cast<std::uint8_t*>(p));
    device_view_ = host;
    device_view_.data = device_.get();
    device_view_.pitch = pitch;
    VPIPE_CUDA_TRY(cudaMemcpy2DAsync(device_.get(), pitch, host.data, host.pitch, host.row_bytes(),
                                     static_cast<std::size_t>(host.height), cudaMemcpyHostToDevice,
                                     stream));
  }
  std::string file_;
  int x_, y_;
  float opacity_;
  Frame image_;  // host RGBA
  std::unique_ptr<std::uint8_t, CudaFree> device_;
  PlaneView device_view_{};
};

}  // namespace

FilterInfo overlay_filter_info() { return Overlay::info(); }

}  // namespace vpipe
