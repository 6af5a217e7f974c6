// Built-in filters, neighbourhood filters: blur, box, and the luma filters unsharp, sobel, eq. They
// run on the CPU through the references in vpipe::kernels (OpenCV), plane by plane, and on the CUDA
// path through vpipe::kernels' CUDA ops; each class's info() says all the registry knows of it.
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

// ---- blur ------------------------------------------------------------------

class Blur final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "blur",
        .summary =
            "Gaussian blur. sigma is in luma pixels; subsampled chroma planes get it scaled.",
        .params = {{"sigma",
                    ParamType::kFloat,
                    "1.0",
                    0,
                    64,
                    "standard deviation in pixels (0: off)",
                    {}}},
        .create = [](const ParamValues& p) { return std::make_unique<Blur>(p.get_float("sigma")); },
        .formats = "8-bit planar YUV and RGB",
        .cuda = true,
        .example = "blur=sigma=1.5",
        .ffmpeg = "gblur"};
  }
  explicit Blur(double sigma) : sigma_(sigma) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("blur", in);
    return in;
  }
  [[nodiscard]] bool is_identity() const override { return sigma_ == 0; }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      ref::gaussian_blur_plane(s, d, sigma_ * plane_scale(in, p));
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      cuda::gaussian_blur_plane(s, d, sigma_ * plane_scale(in, p), ctx.memory, ctx.stream);
    });
  }

 private:
  double sigma_;
};

// ---- box, unsharp, sobel, eq: the tested kernels as filters --------------------

// The planes a luma filter touches: the first of a YUV or gray frame, every one of RGB.
bool luma_or_rgb(const FrameFormat& f, int plane) { return plane == 0 || is_rgb(f.pix_fmt); }

class Box final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "box",
        .summary =
            "Box blur: the mean of a (2r+1)² neighbourhood. radius is in luma pixels; subsampled "
            "chroma planes get it scaled (at least 1).",
        .params = {{"radius", ParamType::kInt, "2", 0, 192, "radius in pixels (0: off)", {}}},
        .create =
            [](const ParamValues& p) {
              return std::make_unique<Box>(static_cast<int>(p.get_int("radius")));
            },
        .formats = "8-bit planar YUV and RGB",
        .cuda = true,
        .example = "box=radius=3",
        .ffmpeg = "boxblur"};
  }
  explicit Box(int radius) : radius_(radius) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("box", in);
    return in;
  }
  [[nodiscard]] bool is_identity() const override { return radius_ == 0; }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      ref::box_blur_plane(s, d, radius(in, p));
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      cuda::box_blur_plane(s, d, radius(in, p), ctx.memory, ctx.stream);
    });
  }

 private:
  int radius(const Frame& f, int p) const {
    return std::max(1, static_cast<int>(std::lround(radius_ * plane_scale(f, p))));
  }
  int radius_;
};

// A filter of luma (every channel of RGB); the chroma planes copied, or set
// neutral (an edge picture has no colour).
class LumaFilter : public Filter {
 public:
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit(name_, in);
    format_ = in;
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      if (luma_or_rgb(format_, p))
        luma(s, d);
      else if (neutral_chroma_)
        ref::fill_plane(d, 128);
      else
        ref::copy_plane(s, d);
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      if (luma_or_rgb(format_, p))
        luma_cuda(s, d, ctx);
      else if (neutral_chroma_)
        cuda::fill_plane(d, 128, ctx.stream);
      else
        cuda::copy_plane(s, d.data, d.pitch, cudaMemcpyDeviceToDevice, ctx.stream);
    });
  }

 protected:
  LumaFilter(const char* name, bool neutral_chroma)
      : name_(name), neutral_chroma_(neutral_chroma) {}
  virtual void luma(const PlaneView& s, const PlaneView& d) = 0;
  virtual void luma_cuda(const PlaneView& s, const PlaneView& d, const CudaContext& ctx) = 0;

 private:
  const char* name_;
  bool neutral_chroma_;
  FrameFormat format_{};
};

class Unsharp final : public LumaFilter {
 public:
  static FilterInfo info() {
    return {
        .name = "unsharp",
        .summary =
            "Unsharp mask: src + amount × (src − gaussian(src, sigma)), on luma (every channel of "
            "RGB).",
        .params = {{"sigma",
                    ParamType::kFloat,
                    "1.0",
                    0.1,
                    32,
                    "the blur's standard deviation in pixels",
                    {}},
                   {"amount",
                    ParamType::kFloat,
                    "1.0",
                    0,
                    10,
                    "how much of the detail to add (0: off)",
                    {}}},
        .create =
            [](const ParamValues& p) {
              return std::make_unique<Unsharp>(p.get_float("sigma"), p.get_float("amount"));
            },
        .formats = "8-bit planar YUV and RGB",
        .cuda = true,
        .example = "unsharp=sigma=1.0:amount=0.8"};
  }
  Unsharp(double sigma, double amount)
      : LumaFilter("unsharp", false), sigma_(sigma), amount_(amount) {}
  [[nodiscard]] bool is_identity() const override { return amount_ == 0; }

 private:
  void luma(const PlaneView& s, const PlaneView& d) override {
    ref::unsharp_plane(s, d, sigma_, amount_);
  }
  void luma_cuda(const PlaneView& s, const PlaneView& d, const CudaContext& ctx) override {
    cuda::unsharp_plane(s, d, sigma_, amount_, ctx.memory, ctx.stream);
  }
  double sigma_, amount_;
};

class Sobel final : public LumaFilter {
 public:
  static FilterInfo info() {
    return {
        .name = "sobel",
        .summary =
            "Edges: sqrt(Gx² + Gy²) of the 3×3 Sobel derivatives of luma, chroma neutral (every "
            "channel of RGB).",
        .create = [](const ParamValues&) { return std::make_unique<Sobel>(); },
        .formats = "8-bit planar YUV and RGB",
        .cuda = true,
        .example = "sobel"};
  }
  Sobel() : LumaFilter("sobel", true) {}

 private:
  void luma(const PlaneView& s, const PlaneView& d) override { ref::sobel_plane(s, d); }
  void luma_cuda(const PlaneView& s, const PlaneView& d, const CudaContext& ctx) override {
    cuda::sobel_plane(s, d, ctx.stream);
  }
};

class Eq final : public LumaFilter {
 public:
  static FilterInfo info() {
    return {
        .name = "eq",
        .summary =
            "Brightness, contrast and gamma, as one lookup table, on luma (every channel of RGB): "
            "x = ((v/255 − 0.5) × contrast + 0.5 + brightness), clamped to [0, 1], then "
            "x^(1/gamma).",
        .params =
            {{"brightness", ParamType::kFloat, "0", -1, 1, "added, in units of full scale", {}},
             {"contrast", ParamType::kFloat, "1", 0, 4, "around mid-grey", {}},
             {"gamma", ParamType::kFloat, "1", 0.1, 10, "above 1 brightens the mid-tones", {}}},
        .create =
            [](const ParamValues& p) {
              return std::make_unique<Eq>(p.get_float("brightness"), p.get_float("contrast"),
                                          p.get_float("gamma"));
            },
        .formats = "8-bit planar YUV and RGB",
        .cuda = true,
        .example = "eq=brightness=0.05:contrast=1.2:gamma=0.9"};
  }
  Eq(double brightness, double contrast, double gamma)
      : LumaFilter("eq", false), identity_(brightness == 0 && contrast == 1 && gamma == 1) {
    ref::make_eq_lut(brightness, contrast, gamma, lut_);
  }
  // Each output sample is its input sample's alone: the fields stay apart.
  [[nodiscard]] bool keeps_fields() const override { return true; }
  [[nodiscard]] bool is_identity() const override { return identity_; }

 private:
  void luma(const PlaneView& s, const PlaneView& d) override { ref::lut_plane(s, d, lut_); }
  void luma_cuda(const PlaneView& s, const PlaneView& d, const CudaContext& ctx) override {
    cuda::lut_plane(s, d, lut_, ctx.stream);
  }
  bool identity_;
  std::uint8_t lut_[256]{};
};

}  // namespace

FilterInfo blur_filter_info() { return Blur::info(); }
FilterInfo box_filter_info() { return Box::info(); }
FilterInfo unsharp_filter_info() { return Unsharp::info(); }
FilterInfo sobel_filter_info() { return Sobel::info(); }
FilterInfo eq_filter_info() { return Eq::info(); }

}  // namespace vpipe
