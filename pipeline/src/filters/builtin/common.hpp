// What the built-in filters share: format checks and plane helpers. Private to
// pipeline/src/filters/builtin/.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string_view>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe::builtin {

inline const AVPixFmtDescriptor& descriptor(AVPixelFormat f) { return *av_pix_fmt_desc_get(f); }

// Formats the plane-wise filters take.
inline void expect_planar_8bit(std::string_view filter, const FrameFormat& in) {
  if (!is_8bit(in.pix_fmt))
    throw not_negotiated(
        fmt::format("{}: cannot take {} (8-bit planar formats only)", filter, to_string(in)));
}

// Width/height must be multiples of the chroma subsampling of `fmt`.
inline void expect_chroma_aligned(std::string_view what, int w, int h, AVPixelFormat fmt) {
  const auto& d = descriptor(fmt);
  const int mw = 1 << d.log2_chroma_w, mh = 1 << d.log2_chroma_h;
  if (w % mw || h % mh)
    throw chain_error(
        fmt::format("{}: {}x{} must be a multiple of {}x{} for {}", what, w, h, mw, mh, d.name));
}

// A picture moved down by `rows` (crop, pad) keeps its fields apart where they keep whole
// chroma rows (splits_into_fields), or where an odd count moves every row, chroma too (a
// format with every chroma row), into the other field: then it swaps them.
inline bool shift_keeps_fields(AVPixelFormat fmt, int rows) {
  return splits_into_fields(fmt, rows) || rows % 2 == 1;
}

// Ratio of a plane's width to the luma width (chroma of 4:2:0: 0.5).
inline double plane_scale(const Frame& f, int plane) {
  return static_cast<double>(f.planes[static_cast<std::size_t>(plane)].width) /
         static_cast<double>(f.format.width);
}

// matrix= and range= of the colour conversions; auto takes the chain's (Filter::colour).
inline ParamSpec matrix_param() {
  return {"matrix",
          ParamType::kChoice,
          "auto",
          0,
          0,
          "auto (the input's tags; untagged: bt601, as swscale), bt601, bt709 or bt2020",
          {"auto", "bt601", "bt709", "bt2020"}};
}
inline ParamSpec range_param() {
  return {"range",
          ParamType::kChoice,
          "auto",
          0,
          0,
          "auto (the input's tags), limited or full",
          {"auto", "limited", "full"}};
}
struct ColourChoice {
  std::optional<ColorMatrix> matrix;  // none: auto
  std::optional<ColorRange> range;
  static ColourChoice from(const ParamValues& p) {
    ColourChoice c;
    if (const auto& m = p.get_string("matrix"); m != "auto")
      c.matrix = m == "bt709"    ? ColorMatrix::kBT709
                 : m == "bt2020" ? ColorMatrix::kBT2020
                                 : ColorMatrix::kBT601;
    if (const auto& r = p.get_string("range"); r != "auto")
      c.range = r == "full" ? ColorRange::kFull : ColorRange::kLimited;
    return c;
  }
  [[nodiscard]] ColorSpec resolve(ColorSpec chain) const {
    return {matrix.value_or(chain.matrix), range.value_or(chain.range), chain.siting};
  }
};

template <class Op>
void for_each_plane(const Frame& in, Frame& out, Op&& op) {
  for (int p = 0; p < in.num_planes; ++p)
    op(p, in.planes[static_cast<std::size_t>(p)], out.planes[static_cast<std::size_t>(p)]);
}

}  // namespace vpipe::builtin
