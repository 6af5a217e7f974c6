// Built-in filters, pixel formats and colour: yuv420p_to_nv12, rgb_to_yuv, to_8bit, invert,
// grayscale, format (swscale). They run on the CPU through the references in vpipe::kernels
// (OpenCV), plane by plane, and on the CUDA path through vpipe::kernels' CUDA ops; each class's
// info() says all the registry knows of it.
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

// ---- rgb_to_yuv (the way back) ----------------------------------------------

// RGB24/RGBA → NV12 or YUV420P in one pass: Y per pixel, each chroma sample from
// the pixels around it, sited as the chain's input (color.hpp's rule, zimg's bilinear)
// (cuda::rgb_to_nv12 / rgb_to_yuv420p; their CPU references are the CPU path). The chain builder
// puts it in place of `format=nv12| yuv420p` on RGB frames, so that a chain that works in RGB
// returns to 4:2:0 on the GPU (and downloads half the bytes) instead of in swscale after the
// download (see build_chain).
// YUV420P → NV12, an exact copy (U and V interleaved): the step before the
// fused pass on CPU-decoded frames, on the GPU when it sits between CUDA
// filters, so that a CPU-decoded frame goes through the same math as NVDEC's.
class PlanarToNv12 final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "yuv420p_to_nv12",
        .summary = "YUV420P to NV12, exact (the chain uses it before resize_rgb on YUV420P input)",
        .create = [](const ParamValues&) { return std::make_unique<PlanarToNv12>(); },
        .formats = "yuv420p",
        .cuda = true,
        .example = "yuv420p_to_nv12"};
  }
  FrameFormat configure(const FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_YUV420P && in.pix_fmt != AV_PIX_FMT_YUVJ420P)
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

// YUV420P10LE → P010, exact (each 10-bit sample moved to the high bits, U and V interleaved):
// the CPU decoder's 10-bit frames into p010_to_rgb at any size (swscale's repack garbled the
// last chroma column of an odd size).
class Planar10ToP010 final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "yuv420p10_to_p010",
            .summary =
                "YUV420P10LE to P010, exact (the chain uses it before p010_to_rgb on yuv420p10le "
                "input)",
            .create = [](const ParamValues&) { return std::make_unique<Planar10ToP010>(); },
            .formats = "yuv420p10le",
            .example = "format=yuv420p10le,yuv420p10_to_p010"};
  }
  FrameFormat configure(const FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_YUV420P10LE)
      throw not_negotiated(fmt::format("yuv420p10_to_p010: cannot take {}", to_string(in)));
    return {AV_PIX_FMT_P010LE, in.width, in.height};
  }
  [[nodiscard]] bool is_format_conversion() const override { return true; }
  void process(const Frame& in, Frame& out) override {
    const PlaneView &y = in.planes[0], &u = in.planes[1], &v = in.planes[2];
    auto word = [](const std::uint8_t* p) { return static_cast<unsigned>(p[0] | p[1] << 8); };
    auto put = [](std::uint8_t* p, unsigned s) {  // the 10 bits at the top of 16
      p[0] = static_cast<std::uint8_t>((s << 6) & 0xFF);
      p[1] = static_cast<std::uint8_t>((s << 6) >> 8);
    };
    for (int r = 0; r < y.height; ++r)
      for (int x = 0; x < y.width; ++x)
        put(out.planes[0].row(r) + 2 * x, word(y.row(r) + 2 * x) & 0x3FF);
    for (int r = 0; r < u.height; ++r)
      for (int x = 0; x < u.width; ++x) {
        std::uint8_t* d = out.planes[1].row(r) + 4 * x;
        put(d, word(u.row(r) + 2 * x) & 0x3FF);
        put(d + 2, word(v.row(r) + 2 * x) & 0x3FF);
      }
  }
};

class RgbToYuv final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "rgb_to_yuv",
        .summary =
            "RGB24/RGBA to NV12 or YUV420P in one pass (BT.601, BT.709 or BT.2020, limited or full "
            "range: by default the one the chain's input came in, and the output is tagged with "
            "it; "
            "chroma sited as the input's: left for H.264/HEVC/MPEG-2, centre for MPEG-1/JPEG, "
            "unless "
            "its stream says, resampled as zscale's bilinear). The chain uses it for "
            "format=nv12|yuv420p on RGB input.",
        .params =
            {{"format", ParamType::kChoice, "nv12", 0, 0, "nv12 or yuv420p", {"nv12", "yuv420p"}},
             matrix_param(),
             range_param()},
        .create =
            [](const ParamValues& p) {
              return std::make_unique<RgbToYuv>(
                  p.get_string("format") == "yuv420p" ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_NV12,
                  ColourChoice::from(p));
            },
        .formats = "rgb24 or rgba in; nv12 or yuv420p out",
        .cuda = true,
        .example = "format=rgb24,rgb_to_yuv=format=nv12:matrix=bt709"};
  }
  RgbToYuv(AVPixelFormat target, ColourChoice colour) : target_(target), choice_(colour) {}
  ColorSpec colour(ColorSpec in) override {
    spec_ = choice_.resolve(in);
    return spec_;
  }
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
  // Each chroma sample is the mean of two rows of the picture, one of each field.
  [[nodiscard]] bool keeps_fields() const override { return false; }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    if (target_ == AV_PIX_FMT_NV12)
      cuda::rgb_to_nv12(in.planes[0], out.planes[0], out.planes[1], spec_, ctx.stream);
    else
      cuda::rgb_to_yuv420p(in.planes[0], out.planes[0], out.planes[1], out.planes[2], spec_,
                           ctx.stream);
  }

 private:
  AVPixelFormat target_;
  ColourChoice choice_;
  ColorSpec spec_ = kUntaggedColour;  // resolved by colour()
};

// ---- p010_to_rgb --------------------------------------------------------------

// P010 (NVDEC's 10-bit frames) → RGB24/RGBA at the same size, from the 10-bit
// samples (cuda::p010_to_rgb; its CPU reference is the CPU path): no rounding to
// 8 bits before the matrix. The chain puts it in place of format=rgb24|rgba on
// P010 frames (and on yuv420p10le, after an exact format=p010le).
class P010ToRgb final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "p010_to_rgb",
            .summary =
                "P010 to RGB24/RGBA from the 10-bit samples (BT.601, BT.709 or BT.2020, limited or "
                "full range: the input's own unless told; chroma sited as the input's, as zscale "
                "sites it). The chain uses it for format=rgb24|rgba on 10-bit 4:2:0 input.",
            .params =
                {{"format", ParamType::kChoice, "rgb24", 0, 0, "rgb24 or rgba", {"rgb24", "rgba"}},
                 matrix_param(),
                 range_param()},
            .create =
                [](const ParamValues& p) {
                  return std::make_unique<P010ToRgb>(
                      p.get_string("format") == "rgba" ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24,
                      ColourChoice::from(p));
                },
            .formats = "p010le in; rgb24 or rgba out",
            .cuda = true,
            .example = "format=p010le,p010_to_rgb=format=rgba"};
  }
  P010ToRgb(AVPixelFormat target, ColourChoice colour) : target_(target), choice_(colour) {}
  ColorSpec colour(ColorSpec in) override {
    spec_ = choice_.resolve(in);
    return spec_;  // the way back to Y'CbCr takes the same
  }
  FrameFormat configure(const FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_P010LE)
      throw not_negotiated(fmt::format("p010_to_rgb: cannot take {} (p010le only)", to_string(in)));
    return {target_, in.width, in.height};
  }
  // Not a mere conversion (is_format_conversion): first in a chain it takes NVDEC's frames on
  // the GPU, as resize_rgb does, instead of sending the chain's start to the CPU.
  void process(const Frame& in, Frame& out) override {
    ref::p010_to_rgb(in.planes[0], in.planes[1], out.planes[0], spec_);
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    cuda::p010_to_rgb(in.planes[0], in.planes[1], out.planes[0], spec_, ctx.stream);
  }

 private:
  AVPixelFormat target_;
  ColourChoice choice_;
  ColorSpec spec_ = kUntaggedColour;  // resolved by colour()
};

// ---- to_8bit -----------------------------------------------------------------

// 9- to 16-bit input (NVDEC's P010 for 10-bit HEVC, libavcodec's yuv420p10le)
// for the 8-bit filters: the same layout with 8-bit samples (p010 → nv12,
// yuv420p10le → yuv420p), each sample rounded half up. The chain builder puts
// it in front of the first filter that cannot take such frames.
class To8Bit final : public Filter {
 public:
  static FilterInfo info() {
    return {
        .name = "to_8bit",
        .summary = "9- to 16-bit samples to 8 bits, rounded (p010 → nv12, yuv420p10le → yuv420p).",
        .create = [](const ParamValues&) { return std::make_unique<To8Bit>(); },
        .formats = "9- to 16-bit YUV or gray in (p010, yuv420p10le…); its 8-bit layout out",
        .cuda = true,
        .example = "format=p010le,to_8bit"};
  }
  // Each output sample is its input sample's alone: the fields stay apart.
  [[nodiscard]] bool keeps_fields() const override { return true; }
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
    return {.name = "invert",
            .summary = "Photographic negative (255 - value, every plane).",
            .create = [](const ParamValues&) { return std::make_unique<Invert>(); },
            .formats = "8-bit planar YUV and RGB",
            .cuda = true,
            .example = "invert",
            .ffmpeg = "negate"};
  }
  // Each output sample is its input sample's alone: the fields stay apart.
  [[nodiscard]] bool keeps_fields() const override { return true; }
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

// ---- grayscale -------------------------------------------------------------

class Grayscale final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "grayscale",
            .summary = "Drop the colour: keep luma, set chroma to neutral (YUV formats).",
            .create = [](const ParamValues&) { return std::make_unique<Grayscale>(); },
            .formats = "8-bit planar YUV and RGB",
            .cuda = true,
            .example = "grayscale"};
  }
  // Each output sample is its input sample's alone: the fields stay apart.
  [[nodiscard]] bool keeps_fields() const override { return true; }
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("grayscale", in);
    if (is_rgb(in.pix_fmt))
      throw not_negotiated(fmt::format("grayscale: cannot take {} (YUV only)", to_string(in)));
    identity_ = descriptor(in.pix_fmt).nb_components == 1;
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
    return {
        .name = "format",
        .summary =
            "Convert the pixel format with swscale (the chain inserts format=yuv420p where a "
            "filter needs it); 4:2:0 chroma is sited as the input's (swscale's chroma "
            "positions), and an interlaced picture whose chroma changes height converts field "
            "by field.",
        .params =
            {{"pix_fmt", ParamType::kString, "", 0, 0, "FFmpeg pixel format name, e.g. nv12", {}}},
        .create =
            [](const ParamValues& p) { return std::make_unique<Format>(p.get_string("pix_fmt")); },
        .formats = "any FFmpeg software pixel format",
        .example = "format=nv12"};
  }
  explicit Format(const std::string& name) : target_(av_get_pix_fmt(name.c_str())) {
    if (target_ == AV_PIX_FMT_NONE)
      throw chain_error(fmt::format("format: unknown pixel format '{}'", name));
    if (descriptor(target_).flags & AV_PIX_FMT_FLAG_HWACCEL)
      throw chain_error(fmt::format("format: '{}' is a hardware format", name));
  }
  // A JPEG format (yuvj420p: MJPEG's) is full range: limited input is expanded into it. So is
  // grey, as FFmpeg's swscale makes it (limited black, 16, is grey's 0).
  ColorSpec colour(ColorSpec in) override {
    colour_ = in;
    if (full_by_name()) in.range = ColorRange::kFull;
    return in;
  }
  FrameFormat configure(const FrameFormat& in) override {
    in_ = in;
    sws_ = make_sws(in.width, in.height);
    if (!sws_)
      throw not_negotiated(fmt::format("format: swscale cannot convert {} to {}", to_string(in),
                                       av_get_pix_fmt_name(target_)));
    // An interlaced picture whose chroma changes height is converted field by field, as
    // FFmpeg's scale=interl=1 does: else each chroma row would mix the two fields' rows.
    // (A palette, data[1], is not a plane to step through.)
    const auto& from = descriptor(in.pix_fmt);
    mixes_rows_ = from.log2_chroma_h != descriptor(target_).log2_chroma_h;  // but for field_sws_
    const bool apart = mixes_rows_ && splits_into_fields(in.pix_fmt, in.height) &&
                       splits_into_fields(target_, in.height) &&
                       !(from.flags & AV_PIX_FMT_FLAG_PAL);
    field_sws_ = apart ? make_sws(in.width, in.height / 2) : nullptr;
    return {target_, in.width, in.height};
  }
  [[nodiscard]] bool is_identity() const override { return in_.pix_fmt == target_; }
  // (A height whose fields' chroma would not divide evenly, 486 lines, converts whole.)
  [[nodiscard]] bool keeps_fields() const override { return !mixes_rows_ || field_sws_; }
  void process(const Frame& in, Frame& out) override {
    if (in.fields == FieldOrder::kProgressive || !field_sws_) {
      sws_scale(sws_.get(), in.av->data, in.av->linesize, 0, in.format.height, out.av->data,
                out.av->linesize);
      return;
    }
    for (int field = 0; field < 2; ++field) {  // every other row, each plane twice as far apart
      const std::uint8_t* src[4] = {};
      std::uint8_t* dst[4] = {};
      int src_stride[4] = {}, dst_stride[4] = {};
      for (int p = 0; p < 4; ++p) {
        if (in.av->data[p]) src[p] = in.av->data[p] + field * in.av->linesize[p];
        if (out.av->data[p]) dst[p] = out.av->data[p] + field * out.av->linesize[p];
        src_stride[p] = 2 * in.av->linesize[p];
        dst_stride[p] = 2 * out.av->linesize[p];
      }
      sws_scale(field_sws_.get(), src, src_stride, 0, in.format.height / 2, dst, dst_stride);
    }
  }

 private:
  // The chain's matrix, and its range kept from Y'CbCr to Y'CbCr (swscale would otherwise
  // take yuvj420p → nv12 for a range conversion, and the output's tags say full), but into
  // a JPEG format, which is full range by its name.
  UniqueSwsContext make_sws(int w, int h) const {
    UniqueSwsContext sws =
        sited_sws({in_.pix_fmt, w, h}, {target_, w, h},
                  SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, colour_.siting);
    if (!sws) return sws;
    const int* coefs =
        sws_getCoefficients(colour_.matrix == ColorMatrix::kBT709    ? SWS_CS_ITU709
                            : colour_.matrix == ColorMatrix::kBT2020 ? SWS_CS_BT2020
                                                                     : SWS_CS_ITU601);
    const int full = colour_.range == ColorRange::kFull ? 1 : 0;
    sws_setColorspaceDetails(sws.get(), coefs, full, coefs, full_by_name() ? 1 : full, 0, 1 << 16,
                             1 << 16);
    return sws;
  }
  // A target full range whatever the input: a JPEG format, or grey (one component, or grey and
  // alpha), as FFmpeg's tool writes it.
  [[nodiscard]] bool full_by_name() const {
    const AVPixFmtDescriptor& d = descriptor(target_);
    return is_jpeg_range(target_) || (!(d.flags & AV_PIX_FMT_FLAG_RGB) && d.nb_components <= 2);
  }

  AVPixelFormat target_;
  FrameFormat in_;
  ColorSpec colour_ = kUntaggedColour;
  bool mixes_rows_ = false;           // the chroma's height changes: rows are resampled
  UniqueSwsContext sws_, field_sws_;  // field_sws_: half height, where fields convert apart
};

}  // namespace

FilterInfo planartonv12_filter_info() { return PlanarToNv12::info(); }
FilterInfo rgbtoyuv_filter_info() { return RgbToYuv::info(); }
FilterInfo planartop010_filter_info() { return Planar10ToP010::info(); }
FilterInfo p010torgb_filter_info() { return P010ToRgb::info(); }
FilterInfo to8bit_filter_info() { return To8Bit::info(); }
FilterInfo invert_filter_info() { return Invert::info(); }
FilterInfo grayscale_filter_info() { return Grayscale::info(); }
FilterInfo format_filter_info() { return Format::info(); }

}  // namespace vpipe
