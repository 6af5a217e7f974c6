// Built-in filters, resize and resize_rgb (NV12 to resized RGB in one pass). They run on the CPU
// through the references in vpipe::kernels (OpenCV), plane by plane, and on the CUDA path through
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

// ---- resize ----------------------------------------------------------------

// The `interp` parameter of resize and resize_rgb: "auto" is area when the
// picture shrinks in either direction, else bilinear.
ref::Interp pick_interp(const std::string& name, const FrameFormat& in, int out_width,
                        int out_height) {
  const bool shrinking = out_width < in.width || out_height < in.height;
  return name == "nearest"    ? ref::Interp::kNearest
         : name == "area"     ? ref::Interp::kArea
         : name == "bilinear" ? ref::Interp::kBilinear
         : shrinking          ? ref::Interp::kArea
                              : ref::Interp::kBilinear;
}
const char* const kInterpHelp =
    "auto (area when shrinking, else bilinear), bilinear, area, nearest";

class Resize final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "resize",
            .summary = "Scale the picture (bilinear up, pixel-area averaging down by default).",
            .params = {{"size",
                        ParamType::kSize,
                        "",
                        1,
                        16384,
                        "output size WIDTHxHEIGHT; -1 keeps aspect",
                        {}},
                       {"interp",
                        ParamType::kChoice,
                        "auto",
                        0,
                        0,
                        kInterpHelp,
                        {"auto", "bilinear", "area", "nearest"}}},
            .create =
                [](const ParamValues& p) {
                  return std::make_unique<Resize>(p.get_size("size"), p.get_string("interp"));
                },
            .formats = "8-bit planar YUV and RGB",
            .cuda = true,
            .example = "resize=1280x720",
            .ffmpeg = "scale scale_cuda scale_npp"};
  }
  Resize(Size size, std::string interp) : size_(size), interp_(std::move(interp)) {}

  ref::Interp pick(const Frame& in, const Frame& out) const {
    return pick_interp(interp_, in.format, out.format.width, out.format.height);
  }

  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("resize", in);
    const auto& d = descriptor(in.pix_fmt);
    const int mw = 1 << d.log2_chroma_w, mh = 1 << d.log2_chroma_h;
    auto keep = [](int other_new, int other_old, int this_old, int mult) {
      const double v = static_cast<double>(this_old) * other_new / other_old;
      return std::max(mult, static_cast<int>(std::lround(v / mult)) * mult);
    };
    out_ = in;
    out_.width = size_.width == -1 ? keep(size_.height, in.height, in.width, mw) : size_.width;
    out_.height = size_.height == -1 ? keep(size_.width, in.width, in.height, mh) : size_.height;
    expect_chroma_aligned("resize", out_.width, out_.height, in.pix_fmt);
    in_ = in;
    return out_;
  }
  [[nodiscard]] bool is_identity() const override { return in_ == out_; }
  [[nodiscard]] bool resamples() const override { return true; }

  void process(const Frame& in, Frame& out) override {
    const ref::Interp interp = pick(in, out);
    for_each_plane(in, out, [&](int, const PlaneView& s, const PlaneView& d) {
      ref::resize_plane(s, d, interp);
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    // One launch for all the planes where they allow it.
    cuda::resize_planes(in.planes.data(), out.planes.data(), in.num_planes, pick(in, out),
                        ctx.stream);
  }

 private:
  Size size_;
  std::string interp_;
  FrameFormat in_, out_;
};

// ---- resize_rgb (the fused path) --------------------------------------------

// NV12 → resized RGB24/RGBA in one pass: each plane sampled at the output's
// pixels (with the interpolation resize would pick; area samples a plane
// by footprint where it shrinks, bilinearly where it grows), then the
// colour conversion, each source byte read once and each output byte written
// once (cuda::nv12_resize_to_rgb; its CPU reference is the CPU path). The
// chain builder puts it in place of `resize` + `format=rgb24|rgba` on NV12
// (see build_chain).
class ResizeRgb final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "resize_rgb",
        .summary =
            "NV12 to resized RGB24/RGBA in one pass (bilinear, area or nearest; BT.601, BT.709 or "
            "BT.2020, limited or full range: the input's own unless told; chroma sited as the "
            "input's, as zscale sites it). The chain uses it for resize + format=rgb24|rgba on "
            "NV12 input.",
        .params =
            {{"size", ParamType::kSize, "", 1, 16384, "output size WIDTHxHEIGHT", {}},
             {"interp",
              ParamType::kChoice,
              "auto",
              0,
              0,
              kInterpHelp,
              {"auto", "bilinear", "area", "nearest"}},
             {"format", ParamType::kChoice, "rgb24", 0, 0, "rgb24 or rgba", {"rgb24", "rgba"}},
             matrix_param(),
             range_param()},
        .create =
            [](const ParamValues& p) {
              return std::make_unique<ResizeRgb>(
                  p.get_size("size"), p.get_string("interp"),
                  p.get_string("format") == "rgba" ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24,
                  ColourChoice::from(p));
            },
        .formats = "nv12 in; rgb24 or rgba out",
        .cuda = true,
        .example = "format=nv12,resize_rgb=640x360:format=rgba"};
  }
  ResizeRgb(Size size, std::string interp_name, AVPixelFormat target, ColourChoice colour)
      : size_(size), interp_name_(std::move(interp_name)), target_(target), choice_(colour) {}
  ColorSpec colour(ColorSpec in) override {
    spec_ = choice_.resolve(in);
    return spec_;  // the way back to Y'CbCr takes the same
  }
  FrameFormat configure(const FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_NV12)
      throw not_negotiated(fmt::format("resize_rgb: cannot take {} (NV12 only)", to_string(in)));
    if (size_.width < 1 || size_.height < 1)
      throw chain_error("resize_rgb: give the size as WIDTHxHEIGHT (no -1)");
    interp_ = pick_interp(interp_name_, in, size_.width, size_.height);
    return {target_, size_.width, size_.height};
  }
  [[nodiscard]] bool resamples() const override { return true; }
  void process(const Frame& in, Frame& out) override {
    ref::nv12_resize_to_rgb(in.planes[0], in.planes[1], out.planes[0], spec_, interp_);
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    cuda::nv12_resize_to_rgb(in.planes[0], in.planes[1], out.planes[0], spec_, interp_, ctx.stream);
  }

 private:
  Size size_;
  std::string interp_name_;
  ref::Interp interp_ = ref::Interp::kBilinear;  // resolved by configure
  AVPixelFormat target_;
  ColourChoice choice_;
  ColorSpec spec_ = kUntaggedColour;  // resolved by colour()
};

}  // namespace

FilterInfo resize_filter_info() { return Resize::info(); }
FilterInfo resizergb_filter_info() { return ResizeRgb::info(); }

}  // namespace vpipe
