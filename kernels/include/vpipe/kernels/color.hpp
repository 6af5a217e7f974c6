// Y'CbCr ↔ R'G'B' arithmetic shared by the CUDA kernels and the CPU
// reference (one formula, compiled for both). 8-bit samples; BT.601 or
// BT.709 matrix; limited (16–235 / 16–240) or full (0–255) range.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define VPIPE_HD __host__ __device__ __forceinline__
#else
#define VPIPE_HD inline
#endif

namespace vpipe {

enum class ColorMatrix { kBT601, kBT709 };
enum class ColorRange { kLimited, kFull };

struct ColorSpec {
  ColorMatrix matrix = ColorMatrix::kBT709;
  ColorRange range = ColorRange::kLimited;
};

struct ColorCoefs {
  float kr, kb;
  float y_off, y_scale;  // Y' = (Y - y_off) / y_scale
  float c_scale;         // C' = (C - 128) / c_scale
};

VPIPE_HD ColorCoefs color_coefs(ColorSpec s) {
  const bool bt709 = s.matrix == ColorMatrix::kBT709;
  const bool limited = s.range == ColorRange::kLimited;
  return {bt709 ? 0.2126f : 0.299f, bt709 ? 0.0722f : 0.114f, limited ? 16.f : 0.f,
          limited ? 219.f : 255.f, limited ? 224.f : 255.f};
}

VPIPE_HD std::uint8_t clamp_u8(float v) {
  v = v < 0.f ? 0.f : (v > 255.f ? 255.f : v);
  return static_cast<std::uint8_t>(v + 0.5f);
}

// Y, Cb, Cr (8-bit, as floats so resampled values pass through) → R, G, B 0–255.
VPIPE_HD void yuv_to_rgb(const ColorCoefs& c, float y, float u, float v, float& r, float& g,
                         float& b) {
  const float yp = (y - c.y_off) / c.y_scale;
  const float cb = (u - 128.f) / c.c_scale, cr = (v - 128.f) / c.c_scale;
  const float rr = yp + 2.f * (1.f - c.kr) * cr;
  const float bb = yp + 2.f * (1.f - c.kb) * cb;
  const float gg = (yp - c.kr * rr - c.kb * bb) / (1.f - c.kr - c.kb);
  r = rr * 255.f;
  g = gg * 255.f;
  b = bb * 255.f;
}

// R, G, B 0–255 → Y and unrounded Cb, Cr (8-bit scale).
VPIPE_HD void rgb_to_yuv(const ColorCoefs& c, float r, float g, float b, float& y, float& u,
                         float& v) {
  const float rr = r / 255.f, gg = g / 255.f, bb = b / 255.f;
  const float yp = c.kr * rr + (1.f - c.kr - c.kb) * gg + c.kb * bb;
  y = c.y_off + c.y_scale * yp;
  u = 128.f + c.c_scale * (bb - yp) / (2.f * (1.f - c.kb));
  v = 128.f + c.c_scale * (rr - yp) / (2.f * (1.f - c.kr));
}

}  // namespace vpipe
