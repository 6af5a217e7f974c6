// The built-in filters. They run on the CPU through the references in
// vpipe::kernels (OpenCV), plane by plane, on any 8-bit planar or semi-planar
// format (yuv420p, nv12, yuv444p, gray…) and packed RGB; other formats are
// converted by the chain builder first.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstring>
#include <thread>

#include <cmath>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/filters/image_file.hpp"
#include "vpipe/pipeline/filters/stamp.hpp"

namespace vpipe {
namespace {

const AVPixFmtDescriptor& descriptor(AVPixelFormat f) { return *av_pix_fmt_desc_get(f); }

// Formats the plane-wise filters take.
void expect_planar_8bit(std::string_view filter, const FrameFormat& in) {
  if (!is_8bit(in.pix_fmt))
    throw not_negotiated(
        fmt::format("{}: cannot take {} (8-bit planar formats only)", filter, to_string(in)));
}

// Width/height must be multiples of the chroma subsampling of `fmt`.
void expect_chroma_aligned(std::string_view what, int w, int h, AVPixelFormat fmt) {
  const auto& d = descriptor(fmt);
  const int mw = 1 << d.log2_chroma_w, mh = 1 << d.log2_chroma_h;
  if (w % mw || h % mh)
    throw chain_error(
        fmt::format("{}: {}x{} must be a multiple of {}x{} for {}", what, w, h, mw, mh, d.name));
}

// Ratio of a plane's width to the luma width (chroma of 4:2:0: 0.5).
double plane_scale(const Frame& f, int plane) {
  return static_cast<double>(f.planes[static_cast<std::size_t>(plane)].width) /
         static_cast<double>(f.format.width);
}

template <class Op>
void for_each_plane(const Frame& in, Frame& out, Op&& op) {
  for (int p = 0; p < in.num_planes; ++p)
    op(p, in.planes[static_cast<std::size_t>(p)], out.planes[static_cast<std::size_t>(p)]);
}

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
    return {
        "resize",
        "Scale the picture (bilinear up, pixel-area averaging down by default).",
        {{"size", ParamType::kSize, "", 1, 16384, "output size WIDTHxHEIGHT; -1 keeps aspect", {}},
         {"interp",
          ParamType::kChoice,
          "auto",
          0,
          0,
          kInterpHelp,
          {"auto", "bilinear", "area", "nearest"}}},
        [](const ParamValues& p) {
          return std::make_unique<Resize>(p.get_size("size"), p.get_string("interp"));
        }};
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
        "resize_rgb",
        "NV12 to resized RGB24/RGBA in one pass (bilinear, area or nearest; BT.601 or BT.709, "
        "limited or full range). The chain uses it for resize + format=rgb24|rgba on NV12 input.",
        {{"size", ParamType::kSize, "", 1, 16384, "output size WIDTHxHEIGHT", {}},
         {"interp",
          ParamType::kChoice,
          "auto",
          0,
          0,
          kInterpHelp,
          {"auto", "bilinear", "area", "nearest"}},
         {"format", ParamType::kChoice, "rgb24", 0, 0, "rgb24 or rgba", {"rgb24", "rgba"}},
         {"matrix", ParamType::kChoice, "bt601", 0, 0, "bt601 or bt709", {"bt601", "bt709"}},
         {"range", ParamType::kChoice, "limited", 0, 0, "limited or full", {"limited", "full"}}},
        [](const ParamValues& p) {
          return std::make_unique<ResizeRgb>(
              p.get_size("size"), p.get_string("interp"),
              p.get_string("format") == "rgba" ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24,
              ColorSpec{
                  p.get_string("matrix") == "bt709" ? ColorMatrix::kBT709 : ColorMatrix::kBT601,
                  p.get_string("range") == "full" ? ColorRange::kFull : ColorRange::kLimited});
        }};
  }
  ResizeRgb(Size size, std::string interp_name, AVPixelFormat target, ColorSpec spec)
      : size_(size), interp_name_(std::move(interp_name)), target_(target), spec_(spec) {}
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
  ColorSpec spec_;
};

// ---- rgb_to_yuv (the way back) ----------------------------------------------

// RGB24/RGBA → NV12 or YUV420P in one pass: Y per pixel, chroma from the mean
// of each 2×2 block (cuda::rgb_to_nv12 / rgb_to_yuv420p; their CPU references
// are the CPU path). The chain builder puts it in place of `format=nv12|
// yuv420p` on RGB frames, so that a chain that works in RGB returns to 4:2:0
// on the GPU (and downloads half the bytes) instead of in swscale after the
// download (see build_chain).
// YUV420P → NV12, an exact copy (U and V interleaved): the step before the
// fused pass on CPU-decoded frames, on the GPU when it sits between CUDA
// filters, so that a CPU-decoded frame goes through the same math as NVDEC's.
class PlanarToNv12 final : public Filter {
 public:
  static FilterInfo info() {
    return {"yuv420p_to_nv12",
            "YUV420P to NV12, exact (the chain uses it before resize_rgb on YUV420P input)",
            {},
            [](const ParamValues&) { return std::make_unique<PlanarToNv12>(); },
            "yuv420p",
            true};
  }
  FrameFormat configure(const FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_YUV420P)
      throw not_negotiated(fmt::format("yuv420p_to_nv12: cannot take {}", to_string(in)));
    return {AV_PIX_FMT_NV12, in.width, in.height};
  }
  [[nodiscard]] bool is_format_conversion() const override { return true; }
  void process(const Frame& in, Frame& out) override {
    ref::copy_plane(in.planes[0], out.planes[0]);
    ref::interleave_uv(in.planes[1], in.planes[2], out.planes[1]);
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    cuda::copy_plane(in.planes[0], out.planes[0].data, out.planes[0].pitch,
                     cudaMemcpyDeviceToDevice, ctx.stream);
    cuda::interleave_uv(in.planes[1], in.planes[2], out.planes[1], ctx.stream);
  }
};

class RgbToYuv final : public Filter {
 public:
  static FilterInfo info() {
    return {
        "rgb_to_yuv",
        "RGB24/RGBA to NV12 or YUV420P in one pass (BT.601 or BT.709, limited or full range; "
        "chroma = mean of each 2x2 block). The chain uses it for format=nv12|yuv420p on RGB input.",
        {{"format", ParamType::kChoice, "nv12", 0, 0, "nv12 or yuv420p", {"nv12", "yuv420p"}},
         {"matrix", ParamType::kChoice, "bt601", 0, 0, "bt601 or bt709", {"bt601", "bt709"}},
         {"range", ParamType::kChoice, "limited", 0, 0, "limited or full", {"limited", "full"}}},
        [](const ParamValues& p) {
          return std::make_unique<RgbToYuv>(
              p.get_string("format") == "yuv420p" ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_NV12,
              ColorSpec{
                  p.get_string("matrix") == "bt709" ? ColorMatrix::kBT709 : ColorMatrix::kBT601,
                  p.get_string("range") == "full" ? ColorRange::kFull : ColorRange::kLimited});
        }};
  }
  RgbToYuv(AVPixelFormat target, ColorSpec spec) : target_(target), spec_(spec) {}
  FrameFormat configure(const FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_RGB24 && in.pix_fmt != AV_PIX_FMT_RGBA)
      throw not_negotiated(
          fmt::format("rgb_to_yuv: cannot take {} (rgb24 or rgba only)", to_string(in)));
    return {target_, in.width, in.height};
  }
  void process(const Frame& in, Frame& out) override {
    if (target_ == AV_PIX_FMT_NV12)
      ref::rgb_to_nv12(in.planes[0], out.planes[0], out.planes[1], spec_);
    else
      ref::rgb_to_yuv420p(in.planes[0], out.planes[0], out.planes[1], out.planes[2], spec_);
  }
  [[nodiscard]] bool is_format_conversion() const override { return true; }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    if (target_ == AV_PIX_FMT_NV12)
      cuda::rgb_to_nv12(in.planes[0], out.planes[0], out.planes[1], spec_, ctx.stream);
    else
      cuda::rgb_to_yuv420p(in.planes[0], out.planes[0], out.planes[1], out.planes[2], spec_,
                           ctx.stream);
  }

 private:
  AVPixelFormat target_;
  ColorSpec spec_;
};

// ---- blur ------------------------------------------------------------------

class Blur final : public Filter {
 public:
  static FilterInfo info() {
    return {
        "blur",
        "Gaussian blur. sigma is in luma pixels; subsampled chroma planes get it scaled.",
        {{"sigma", ParamType::kFloat, "1.0", 0, 64, "standard deviation in pixels (0: off)", {}}},
        [](const ParamValues& p) { return std::make_unique<Blur>(p.get_float("sigma")); }};
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

bool is_rgb(const FrameFormat& f) {
  return (descriptor(f.pix_fmt).flags & AV_PIX_FMT_FLAG_RGB) != 0;
}
// The planes a luma filter touches: the first of a YUV or gray frame, every one of RGB.
bool luma_or_rgb(const FrameFormat& f, int plane) { return plane == 0 || is_rgb(f); }

class Box final : public Filter {
 public:
  static FilterInfo info() {
    return {"box",
            "Box blur: the mean of a (2r+1)² neighbourhood. radius is in luma pixels; subsampled "
            "chroma planes get it scaled (at least 1).",
            {{"radius", ParamType::kInt, "2", 0, 192, "radius in pixels (0: off)", {}}},
            [](const ParamValues& p) {
              return std::make_unique<Box>(static_cast<int>(p.get_int("radius")));
            }};
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
        "unsharp",
        "Unsharp mask: src + amount × (src − gaussian(src, sigma)), on luma (every channel of "
        "RGB).",
        {{"sigma",
          ParamType::kFloat,
          "1.0",
          0.1,
          32,
          "the blur's standard deviation in pixels",
          {}},
         {"amount", ParamType::kFloat, "1.0", 0, 10, "how much of the detail to add (0: off)", {}}},
        [](const ParamValues& p) {
          return std::make_unique<Unsharp>(p.get_float("sigma"), p.get_float("amount"));
        }};
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
    return {"sobel",
            "Edges: sqrt(Gx² + Gy²) of the 3×3 Sobel derivatives of luma, chroma neutral (every "
            "channel of RGB).",
            {},
            [](const ParamValues&) { return std::make_unique<Sobel>(); }};
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
        "eq",
        "Brightness, contrast and gamma, as one lookup table, on luma (every channel of RGB): "
        "x = ((v/255 − 0.5) × contrast + 0.5 + brightness), clamped to [0, 1], then x^(1/gamma).",
        {{"brightness", ParamType::kFloat, "0", -1, 1, "added, in units of full scale", {}},
         {"contrast", ParamType::kFloat, "1", 0, 4, "around mid-grey", {}},
         {"gamma", ParamType::kFloat, "1", 0.1, 10, "above 1 brightens the mid-tones", {}}},
        [](const ParamValues& p) {
          return std::make_unique<Eq>(p.get_float("brightness"), p.get_float("contrast"),
                                      p.get_float("gamma"));
        }};
  }
  Eq(double brightness, double contrast, double gamma)
      : LumaFilter("eq", false), identity_(brightness == 0 && contrast == 1 && gamma == 1) {
    ref::make_eq_lut(brightness, contrast, gamma, lut_);
  }
  [[nodiscard]] bool is_identity() const override { return identity_; }

 private:
  void luma(const PlaneView& s, const PlaneView& d) override { ref::lut_plane(s, d, lut_); }
  void luma_cuda(const PlaneView& s, const PlaneView& d, const CudaContext& ctx) override {
    cuda::lut_plane(s, d, lut_, ctx.stream);
  }
  bool identity_;
  std::uint8_t lut_[256]{};
};

// ---- crop ------------------------------------------------------------------

class Crop final : public Filter {
 public:
  static FilterInfo info() {
    return {"crop",
            "Keep a rectangle of the picture.",
            {{"w", ParamType::kInt, "", 1, 65536, "width of the rectangle", {}},
             {"h", ParamType::kInt, "", 1, 65536, "height of the rectangle", {}},
             {"x", ParamType::kInt, "-1", -1, 65536, "left edge (-1: centred)", {}},
             {"y", ParamType::kInt, "-1", -1, 65536, "top edge (-1: centred)", {}}},
            [](const ParamValues& p) {
              return std::make_unique<Crop>(p.get_int("w"), p.get_int("h"), p.get_int("x"),
                                            p.get_int("y"));
            }};
  }
  Crop(long long w, long long h, long long x, long long y)
      : w_(static_cast<int>(w)),
        h_(static_cast<int>(h)),
        x_(static_cast<int>(x)),
        y_(static_cast<int>(y)) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("crop", in);
    const auto& d = descriptor(in.pix_fmt);
    const int mw = 1 << d.log2_chroma_w, mh = 1 << d.log2_chroma_h;
    if (x_ < 0) x_ = (in.width - w_) / 2 / mw * mw;
    if (y_ < 0) y_ = (in.height - h_) / 2 / mh * mh;
    if (x_ + w_ > in.width || y_ + h_ > in.height || x_ < 0 || y_ < 0)
      throw chain_error(fmt::format("crop: {}x{} at ({},{}) does not fit in {}x{}", w_, h_, x_, y_,
                                    in.width, in.height));
    expect_chroma_aligned("crop", w_, h_, in.pix_fmt);
    expect_chroma_aligned("crop offset", x_, y_, in.pix_fmt);
    identity_ = w_ == in.width && h_ == in.height;
    return {in.pix_fmt, w_, h_};
  }
  [[nodiscard]] bool is_identity() const override { return identity_; }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      ref::crop_plane(s, d, offset_x(in, p), offset_y(in, p));
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      cuda::crop_plane(s, d, offset_x(in, p), offset_y(in, p), ctx.stream);
    });
  }
  int offset_x(const Frame& in, int p) const { return static_cast<int>(x_ * plane_scale(in, p)); }
  int offset_y(const Frame& in, int p) const {
    return static_cast<int>(
        y_ * static_cast<double>(in.planes[static_cast<std::size_t>(p)].height) / in.format.height);
  }

 private:
  int w_, h_, x_, y_;
  bool identity_ = false;
};

// ---- pad -------------------------------------------------------------------

// pad=w:h: the picture at the top left, its right column and bottom row
// repeated (what an encoder that needs even sizes gets from an odd-sized
// picture, the default of --fit). With a colour: a border of that colour, the
// picture at (x, y) (a letterbox).
class Pad final : public Filter {
 public:
  static FilterInfo info() {
    return {"pad",
            "Extend the picture to w x h: edges repeated, or a coloured border with the picture "
            "at (x, y).",
            {{"w", ParamType::kInt, "", 1, 65536, "width, at least the picture's", {}},
             {"h", ParamType::kInt, "", 1, 65536, "height, at least the picture's", {}},
             {"x", ParamType::kInt, "0", 0, 65536, "left edge of the picture (with a colour)", {}},
             {"y", ParamType::kInt, "0", 0, 65536, "top edge of the picture (with a colour)", {}},
             {"color",
              ParamType::kChoice,
              "edge",
              0,
              0,
              "edge (repeat the right column and bottom row), black, white or gray",
              {"edge", "black", "white", "gray"}}},
            [](const ParamValues& p) {
              return std::make_unique<Pad>(p.get_int("w"), p.get_int("h"), p.get_int("x"),
                                           p.get_int("y"), p.get_string("color"));
            }};
  }
  Pad(long long w, long long h, long long x, long long y, std::string color)
      : w_(static_cast<int>(w)),
        h_(static_cast<int>(h)),
        x_(static_cast<int>(x)),
        y_(static_cast<int>(y)),
        color_(std::move(color)) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("pad", in);
    if (color_ == "edge" && (x_ || y_))
      throw chain_error(
          "pad: color=edge repeats the right and bottom edges, so x and y must be 0 "
          "(give color=black for a border around the picture)");
    if (x_ + in.width > w_ || y_ + in.height > h_)
      throw chain_error(fmt::format("pad: the {}x{} picture at ({},{}) does not fit in {}x{}",
                                    in.width, in.height, x_, y_, w_, h_));
    expect_chroma_aligned("pad", w_, h_, in.pix_fmt);
    expect_chroma_aligned("pad offset", x_, y_, in.pix_fmt);
    fills_ = plane_fills(in.pix_fmt);
    identity_ = w_ == in.width && h_ == in.height;
    return {in.pix_fmt, w_, h_};
  }
  [[nodiscard]] bool is_identity() const override { return identity_; }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      if (color_ == "edge")
        ref::pad_plane(s, d);
      else
        ref::pad_plane(s, d, offset(out, p, x_, true), offset(out, p, y_, false),
                       fills_[static_cast<std::size_t>(p)]);
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      if (color_ == "edge")
        cuda::pad_edge_plane(s, d, ctx.stream);
      else
        cuda::pad_plane(s, d, offset(out, p, x_, true), offset(out, p, y_, false),
                        fills_[static_cast<std::size_t>(p)], ctx.stream);
    });
  }

 private:
  // The offset in plane p's samples (chroma planes are subsampled).
  static int offset(const Frame& out, int p, int v, bool horizontal) {
    const auto& o = out.planes[static_cast<std::size_t>(p)];
    return horizontal ? v * o.width / out.format.width : v * o.height / out.format.height;
  }
  // The sample value of the colour in each plane: limited range for YUV
  // (black is Y 16), full range for RGB, gray and the yuvj formats.
  std::array<std::uint8_t, 4> plane_fills(AVPixelFormat f) const {
    const auto& d = descriptor(f);
    const bool rgb = d.flags & AV_PIX_FMT_FLAG_RGB;
    const bool full =
        rgb || d.nb_components <= 2 || std::string_view(d.name).substr(0, 4) == "yuvj";
    const int level = color_ == "white" ? 255 : color_ == "gray" ? 128 : 0;
    const auto luma = static_cast<std::uint8_t>(full ? level : 16 + level * 219 / 255);
    if (rgb) return {luma, luma, luma, luma};
    return {luma, 128, 128, 255};  // (a fourth plane is alpha: opaque)
  }
  int w_, h_, x_, y_;
  std::string color_;
  std::array<std::uint8_t, 4> fills_{};
  bool identity_ = false;
};

// ---- flip ------------------------------------------------------------------

class Flip final : public Filter {
 public:
  static FilterInfo info() {
    return {"flip",
            "Mirror the picture.",
            {{"dir",
              ParamType::kChoice,
              "h",
              0,
              0,
              "h (left-right), v (upside down), hv (both)",
              {"h", "v", "hv"}}},
            [](const ParamValues& p) { return std::make_unique<Flip>(p.get_string("dir")); }};
  }
  explicit Flip(const std::string& dir)
      : h_(dir.find('h') != std::string::npos), v_(dir.find('v') != std::string::npos) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("flip", in);
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [&](int, const PlaneView& s, const PlaneView& d) {
      ref::flip_plane(s, d, h_, v_);
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int, const PlaneView& s, const PlaneView& d) {
      cuda::flip_plane(s, d, h_, v_, ctx.stream);
    });
  }

 private:
  bool h_, v_;
};

// ---- overlay ---------------------------------------------------------------

// A picture from a file (a watermark: PNG with alpha) blended over RGB(A)
// frames at (x, y); the parts outside the frame are cut off. The picture is
// read once, and on the CUDA path uploaded once.
class Overlay final : public Filter {
 public:
  static FilterInfo info() {
    return {"overlay",
            "Blend a picture from a file (PNG with alpha) over the frame: c = base(1 - a) + "
            "over a, a = alpha/255 x opacity.",
            {{"file", ParamType::kString, "", 0, 0, "the picture (anything FFmpeg reads)", {}},
             {"x", ParamType::kInt, "0", 0, 65536, "left edge of the picture", {}},
             {"y", ParamType::kInt, "0", 0, 65536, "top edge of the picture", {}},
             {"opacity", ParamType::kFloat, "1", 0, 1, "0 (invisible) … 1 (its own alpha)", {}}},
            [](const ParamValues& p) {
              return std::make_unique<Overlay>(p.get_string("file"), p.get_int("x"), p.get_int("y"),
                                               p.get_float("opacity"));
            }};
  }
  Overlay(std::string file, long long x, long long y, double opacity)
      : file_(std::move(file)),
        x_(static_cast<int>(x)),
        y_(static_cast<int>(y)),
        opacity_(static_cast<float>(opacity)) {}
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

// ---- to_8bit -----------------------------------------------------------------

// 9- to 16-bit input (NVDEC's P010 for 10-bit HEVC, libavcodec's yuv420p10le)
// for the 8-bit filters: the same layout with 8-bit samples (p010 → nv12,
// yuv420p10le → yuv420p), each sample rounded half up. The chain builder puts
// it in front of the first filter that cannot take such frames.
class To8Bit final : public Filter {
 public:
  static FilterInfo info() {
    return {"to_8bit",
            "9- to 16-bit samples to 8 bits, rounded (p010 → nv12, yuv420p10le → yuv420p).",
            {},
            [](const ParamValues&) { return std::make_unique<To8Bit>(); }};
  }
  FrameFormat configure(const FrameFormat& in) override {
    const AVPixelFormat out = eight_bit_twin(in.pix_fmt);
    if (out == AV_PIX_FMT_NONE)
      throw not_negotiated(
          fmt::format("to_8bit: cannot take {} (9- to 16-bit YUV or gray)", to_string(in)));
    const auto& c = descriptor(in.pix_fmt).comp[0];
    depth_ = c.depth;
    shift_ = c.shift;
    return {out, in.width, in.height};
  }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [&](int, const PlaneView& s, const PlaneView& d) {
      ref::narrow_plane(s, d, depth_, shift_);
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int, const PlaneView& s, const PlaneView& d) {
      cuda::narrow_plane(s, d, depth_, shift_, ctx.stream);
    });
  }
  // The 8-bit format with the same planes, components and subsampling; NONE
  // when `f` is not a 9-16-bit format vpipe's planes describe.
  static AVPixelFormat eight_bit_twin(AVPixelFormat f) {
    if (!has_plane_layout(f) || is_8bit(f)) return AV_PIX_FMT_NONE;
    const auto& d = descriptor(f);
    for (AVPixelFormat t : {AV_PIX_FMT_NV12, AV_PIX_FMT_NV16, AV_PIX_FMT_NV24, AV_PIX_FMT_YUV420P,
                            AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV444P, AV_PIX_FMT_GRAY8}) {
      const auto& e = descriptor(t);
      bool same = e.nb_components == d.nb_components && e.log2_chroma_w == d.log2_chroma_w &&
                  e.log2_chroma_h == d.log2_chroma_h;
      for (int c = 0; same && c < d.nb_components; ++c)
        same = e.comp[c].plane == d.comp[c].plane && e.comp[c].step * 2 == d.comp[c].step;
      if (same) return t;
    }
    return AV_PIX_FMT_NONE;
  }

 private:
  int depth_ = 10, shift_ = 0;
};

// ---- invert ----------------------------------------------------------------

class Invert final : public Filter {
 public:
  static FilterInfo info() {
    return {
        "invert", "Photographic negative (255 - value, every plane).", {}, [](const ParamValues&) {
          return std::make_unique<Invert>();
        }};
  }
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("invert", in);
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out,
                   [](int, const PlaneView& s, const PlaneView& d) { ref::invert_plane(s, d); });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int, const PlaneView& s, const PlaneView& d) {
      cuda::invert_plane(s, d, ctx.stream);
    });
  }
};

// ---- delay -----------------------------------------------------------------

// A slow stage on purpose: rehearses what a live pipeline does when a filter
// cannot keep up (see --drop).
class Delay final : public Filter {
 public:
  static FilterInfo info() {
    return {"delay",
            "Passes frames through after sleeping ms milliseconds each (a deliberately slow "
            "stage, to rehearse the drop policy and latency).",
            {{"ms", ParamType::kInt, "10", 0, 10000, "milliseconds per frame", {}}},
            [](const ParamValues& p) { return std::make_unique<Delay>(p.get_int("ms")); }};
  }
  explicit Delay(int ms) : ms_(ms) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("delay", in);
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    for_each_plane(in, out, [](int, const PlaneView& s, const PlaneView& d) {
      for (int y = 0; y < s.height; ++y) std::memcpy(d.row(y), s.row(y), s.row_bytes());
    });
  }

 private:
  int ms_;
};

// ---- stamp -----------------------------------------------------------------

// The sender's half of glass-to-glass latency (see stamp.hpp).
class Stamp final : public Filter {
 public:
  static FilterInfo info() {
    return {"stamp",
            "Write the wall-clock time into the picture's top rows (64 black/white cells; YUV, "
            "width >= 128): a receiver reading stamps (read_stamps) reports glass-to-glass "
            "latency.",
            {},
            [](const ParamValues&) { return std::make_unique<Stamp>(); }};
  }
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("stamp", in);
    if (descriptor(in.pix_fmt).flags & AV_PIX_FMT_FLAG_RGB)
      throw not_negotiated(fmt::format("stamp: cannot take {} (YUV only)", to_string(in)));
    if (in.width < 128)
      throw chain_error(fmt::format("stamp: {} is narrower than 128", to_string(in)));
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [](int, const PlaneView& s, const PlaneView& d) {
      for (int y = 0; y < s.height; ++y) std::memcpy(d.row(y), s.row(y), s.row_bytes());
    });
    write_stamp(out.planes[0], stamp_clock_us());
  }
};

// ---- grayscale -------------------------------------------------------------

class Grayscale final : public Filter {
 public:
  static FilterInfo info() {
    return {"grayscale",
            "Drop the colour: keep luma, set chroma to neutral (YUV formats).",
            {},
            [](const ParamValues&) { return std::make_unique<Grayscale>(); }};
  }
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("grayscale", in);
    const auto& d = descriptor(in.pix_fmt);
    if (d.flags & AV_PIX_FMT_FLAG_RGB)
      throw not_negotiated(fmt::format("grayscale: cannot take {} (YUV only)", to_string(in)));
    identity_ = d.nb_components == 1;
    return in;
  }
  [[nodiscard]] bool is_identity() const override { return identity_; }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [](int p, const PlaneView& s, const PlaneView& d) {
      if (p == 0)
        ref::copy_plane(s, d);
      else if (p < 3)
        ref::fill_plane(d, 128);
      else
        ref::copy_plane(s, d);  // alpha
    });
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for_each_plane(in, out, [&](int p, const PlaneView& s, const PlaneView& d) {
      if (p == 0 || p >= 3)
        cuda::copy_plane(s, d.data, d.pitch, cudaMemcpyDeviceToDevice, ctx.stream);
      else
        cuda::fill_plane(d, 128, ctx.stream);
    });
  }

 private:
  bool identity_ = false;
};

// ---- format (swscale) --------------------------------------------------------

class Format final : public Filter {
 public:
  static FilterInfo info() {
    return {"format",
            "Convert the pixel format with swscale (the chain inserts format=yuv420p where a "
            "filter needs it).",
            {{"pix_fmt", ParamType::kString, "", 0, 0, "FFmpeg pixel format name, e.g. nv12", {}}},
            [](const ParamValues& p) { return std::make_unique<Format>(p.get_string("pix_fmt")); }};
  }
  explicit Format(const std::string& name) : target_(av_get_pix_fmt(name.c_str())) {
    if (target_ == AV_PIX_FMT_NONE)
      throw chain_error(fmt::format("format: unknown pixel format '{}'", name));
    if (descriptor(target_).flags & AV_PIX_FMT_FLAG_HWACCEL)
      throw chain_error(fmt::format("format: '{}' is a hardware format", name));
  }
  FrameFormat configure(const FrameFormat& in) override {
    in_ = in;
    sws_.reset(sws_getContext(in.width, in.height, in.pix_fmt, in.width, in.height, target_,
                              SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr,
                              nullptr));
    if (!sws_)
      throw not_negotiated(fmt::format("format: swscale cannot convert {} to {}", to_string(in),
                                       av_get_pix_fmt_name(target_)));
    return {target_, in.width, in.height};
  }
  [[nodiscard]] bool is_identity() const override { return in_.pix_fmt == target_; }
  void process(const Frame& in, Frame& out) override {
    sws_scale(sws_.get(), in.av->data, in.av->linesize, 0, in.format.height, out.av->data,
              out.av->linesize);
  }

 private:
  AVPixelFormat target_;
  FrameFormat in_;
  UniqueSwsContext sws_;
};

}  // namespace

void register_builtin_filters(FilterRegistry& registry) {
  auto with_cuda = [](FilterInfo info) {
    info.cuda = true;
    return info;
  };
  registry.add(with_cuda(Resize::info()));
  registry.add(with_cuda(Blur::info()));
  registry.add(with_cuda(Crop::info()));
  registry.add(with_cuda(Flip::info()));
  registry.add(with_cuda(Invert::info()));
  registry.add(with_cuda(Grayscale::info()));
  registry.add(with_cuda(Box::info()));
  registry.add(with_cuda(Unsharp::info()));
  registry.add(with_cuda(Sobel::info()));
  registry.add(with_cuda(Eq::info()));
  registry.add(with_cuda(Pad::info()));
  FilterInfo to_8bit = with_cuda(To8Bit::info());
  to_8bit.formats = "9- to 16-bit YUV or gray in (p010, yuv420p10le…); its 8-bit layout out";
  registry.add(to_8bit);
  FilterInfo overlay = with_cuda(Overlay::info());
  overlay.formats = "rgb24 or rgba";
  registry.add(overlay);
  FilterInfo resize_rgb = with_cuda(ResizeRgb::info());
  resize_rgb.formats = "nv12 in; rgb24 or rgba out";
  registry.add(resize_rgb);
  FilterInfo rgb_to_yuv = with_cuda(RgbToYuv::info());
  rgb_to_yuv.formats = "rgb24 or rgba in; nv12 or yuv420p out";
  registry.add(rgb_to_yuv);
  registry.add(PlanarToNv12::info());
  registry.add(Delay::info());
  registry.add(Stamp::info());
  FilterInfo format = Format::info();
  format.formats = "any FFmpeg software pixel format";
  registry.add(format);
}

}  // namespace vpipe
