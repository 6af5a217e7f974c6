// Built-in filters, geometry: crop, pad, flip. They run on the CPU through the references
// in vpipe::kernels (OpenCV), plane by plane, and on the CUDA path through
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

// ---- crop ------------------------------------------------------------------

class Crop final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "crop",
            .summary = "Keep a rectangle of the picture.",
            .params = {{"w", ParamType::kInt, "", 1, 65536, "width of the rectangle", {}},
                       {"h", ParamType::kInt, "", 1, 65536, "height of the rectangle", {}},
                       {"x", ParamType::kInt, "-1", -1, 65536, "left edge (-1: centred)", {}},
                       {"y", ParamType::kInt, "-1", -1, 65536, "top edge (-1: centred)", {}}},
            .create =
                [](const ParamValues& p) {
                  return std::make_unique<Crop>(p.get_int("w"), p.get_int("h"), p.get_int("x"),
                                                p.get_int("y"));
                },
            .formats = "8-bit planar YUV and RGB",
            .cuda = true,
            .example = "crop=w=640:h=360:x=320:y=180"};
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
    pix_fmt_ = in.pix_fmt;
    return {in.pix_fmt, w_, h_};
  }
  [[nodiscard]] bool is_identity() const override { return identity_; }
  [[nodiscard]] bool keeps_fields() const override { return shift_keeps_fields(pix_fmt_, y_); }
  [[nodiscard]] bool swaps_fields() const override { return y_ % 2 == 1; }
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
  AVPixelFormat pix_fmt_ = AV_PIX_FMT_NONE;
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
    return {
        .name = "pad",
        .summary =
            "Extend the picture to w x h: edges repeated, or a coloured border with the picture "
            "at (x, y).",
        .params =
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
        .create =
            [](const ParamValues& p) {
              return std::make_unique<Pad>(p.get_int("w"), p.get_int("h"), p.get_int("x"),
                                           p.get_int("y"), p.get_string("color"));
            },
        .formats = "8-bit planar YUV and RGB",
        .cuda = true,
        .example = "pad=w=1920:h=1200:color=black"};
  }
  Pad(long long w, long long h, long long x, long long y, std::string color)
      : w_(static_cast<int>(w)),
        h_(static_cast<int>(h)),
        x_(static_cast<int>(x)),
        y_(static_cast<int>(y)),
        color_(std::move(color)) {}
  ColorSpec colour(ColorSpec in) override {
    full_range_ = in.range == ColorRange::kFull;  // NVDEC's NV12 of a full-range stream
    return in;
  }
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
    pix_fmt_ = in.pix_fmt;
    return {in.pix_fmt, w_, h_};
  }
  [[nodiscard]] bool is_identity() const override { return identity_; }
  [[nodiscard]] bool keeps_fields() const override { return shift_keeps_fields(pix_fmt_, y_); }
  [[nodiscard]] bool swaps_fields() const override { return y_ % 2 == 1; }
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
  // The sample value of the colour in each plane: the chain's range for YUV
  // (limited: black is Y 16), full range for RGB, gray and the yuvj formats.
  std::array<std::uint8_t, 4> plane_fills(AVPixelFormat f) const {
    const auto& d = descriptor(f);
    const bool rgb = is_rgb(f);
    const bool full = full_range_ || rgb || d.nb_components <= 2 || is_jpeg_range(f);
    const int level = color_ == "white" ? 255 : color_ == "gray" ? 128 : 0;
    const auto luma = static_cast<std::uint8_t>(full ? level : 16 + level * 219 / 255);
    if (rgb) return {luma, luma, luma, luma};
    return {luma, 128, 128, 255};  // (a fourth plane is alpha: opaque)
  }
  int w_, h_, x_, y_;
  AVPixelFormat pix_fmt_ = AV_PIX_FMT_NONE;
  std::string color_;
  bool full_range_ = false;  // the chain's (colour())
  std::array<std::uint8_t, 4> fills_{};
  bool identity_ = false;
};

// ---- flip ------------------------------------------------------------------

class Flip final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "flip",
        .summary = "Mirror the picture.",
        .params = {{"dir",
                    ParamType::kChoice,
                    "h",
                    0,
                    0,
                    "h (left-right), v (upside down), hv (both)",
                    {"h", "v", "hv"}}},
        .create = [](const ParamValues& p) { return std::make_unique<Flip>(p.get_string("dir")); },
        .formats = "8-bit planar YUV and RGB",
        .cuda = true,
        .example = "flip=dir=h",
        .ffmpeg = "hflip:flip=dir=h vflip:flip=dir=v"};
  }
  explicit Flip(const std::string& dir)
      : h_(dir.find('h') != std::string::npos), v_(dir.find('v') != std::string::npos) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("flip", in);
    in_ = in;
    return in;
  }
  // Upside down, row r becomes row height-1-r: of the other field where the height is even,
  // the chroma rows too where the fields have whole ones (splits_into_fields).
  [[nodiscard]] bool keeps_fields() const override {
    return !v_ || splits_into_fields(in_.pix_fmt, in_.height);
  }
  [[nodiscard]] bool swaps_fields() const override { return v_ && in_.height % 2 == 0; }
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
  FrameFormat in_;
};

}  // namespace

FilterInfo crop_filter_info() { return Crop::info(); }
FilterInfo pad_filter_info() { return Pad::info(); }
FilterInfo flip_filter_info() { return Flip::info(); }

}  // namespace vpipe
