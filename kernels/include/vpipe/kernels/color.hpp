// Per-pixel arithmetic shared by the CUDA kernels and the CPU references (one
// formula, compiled for both): Y'CbCr ↔ R'G'B', P010 samples, alpha overlay. 8-bit samples (and
// P010's 10 bits, on the 8-bit scale); BT.601, BT.709 or BT.2020 (non-constant luminance)
// matrix; limited (16–235 / 16–240) or full (0–255) range; 4:2:0 chroma sited as the stream
// says, resampled as zimg (FFmpeg's zscale) resamples it.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define VPIPE_HD __host__ __device__ __forceinline__
#else
#define VPIPE_HD inline
#endif

namespace vpipe {

enum class ColorMatrix { kBT601, kBT709, kBT2020 };
enum class ColorRange { kLimited, kFull };

// Where each 4:2:0 chroma sample sits among the four luma samples it covers: H.273's
// chroma_sample_loc_type, FFmpeg's AVChromaLocation less one. Left (type 0) is MPEG-2's, H.264's
// and HEVC's default; centre (type 1) MPEG-1's and JPEG's.
enum class ChromaSiting : std::uint8_t { kLeft, kCenter, kTopLeft, kTop, kBottomLeft, kBottom };

struct ColorSpec {
  ColorMatrix matrix = ColorMatrix::kBT709;
  ColorRange range = ColorRange::kLimited;
  ChromaSiting siting = ChromaSiting::kLeft;
};
VPIPE_HD bool operator==(ColorSpec a, ColorSpec b) {
  return a.matrix == b.matrix && a.range == b.range && a.siting == b.siting;
}
VPIPE_HD bool operator!=(ColorSpec a, ColorSpec b) { return !(a == b); }

// Precomputed once per conversion: the per-pixel work is multiply-adds only.
struct ColorCoefs {
  float kr, kb;
  float y_off, y_scale;  // Y' = (Y - y_off) / y_scale
  float c_scale;         // C' = (C - 128) / c_scale
  float p010_scale;      // a 10-bit sample on the 8-bit scale: /4 limited, ·255/1023 full
  // YUV → RGB (0–255): R = ys·(Y−off) + rv·(V−128), G = ys·(Y−off) + gu·(U−128) + gv·(V−128),
  // B = ys·(Y−off) + bu·(U−128).
  float ys, rv, gu, gv, bu;
  // RGB (0–255) → YUV: Y = off + yr·R + yg·G + yb·B, U = 128 + ur·R + ug·G + ub·B, V likewise.
  float yr, yg, yb, ur, ug, ub, vr, vg, vb;
};

VPIPE_HD ColorCoefs color_coefs(ColorSpec s) {
  const bool limited = s.range == ColorRange::kLimited;
  ColorCoefs c{};
  c.kr = s.matrix == ColorMatrix::kBT709    ? 0.2126f
         : s.matrix == ColorMatrix::kBT2020 ? 0.2627f
                                            : 0.299f;
  c.kb = s.matrix == ColorMatrix::kBT709    ? 0.0722f
         : s.matrix == ColorMatrix::kBT2020 ? 0.0593f
                                            : 0.114f;
  c.p010_scale = limited ? 0.25f : 255.f / 1023.f;
  c.y_off = limited ? 16.f : 0.f;
  c.y_scale = limited ? 219.f : 255.f;
  c.c_scale = limited ? 224.f : 255.f;
  const float kg = 1.f - c.kr - c.kb;
  c.ys = 255.f / c.y_scale;
  c.rv = 255.f * 2.f * (1.f - c.kr) / c.c_scale;
  c.bu = 255.f * 2.f * (1.f - c.kb) / c.c_scale;
  c.gu = -c.kb * c.bu / kg;
  c.gv = -c.kr * c.rv / kg;
  const float yk = c.y_scale / 255.f;
  c.yr = yk * c.kr;
  c.yg = yk * kg;
  c.yb = yk * c.kb;
  const float uk = c.c_scale / (255.f * 2.f * (1.f - c.kb));
  const float vk = c.c_scale / (255.f * 2.f * (1.f - c.kr));
  c.ur = -uk * c.kr;
  c.ug = -uk * kg;
  c.ub = uk * (1.f - c.kb);
  c.vr = vk * (1.f - c.kr);
  c.vg = -vk * kg;
  c.vb = -vk * c.kb;
  return c;
}

VPIPE_HD std::uint8_t clamp_u8(float v) {
  v = v < 0.f ? 0.f : (v > 255.f ? 255.f : v);
  return static_cast<std::uint8_t>(v + 0.5f);
}

// Y, Cb, Cr (8-bit, as floats so resampled values pass through) → R, G, B 0–255.
VPIPE_HD void yuv_to_rgb(const ColorCoefs& c, float y, float u, float v, float& r, float& g,
                         float& b) {
  const float yy = c.ys * (y - c.y_off), cb = u - 128.f, cr = v - 128.f;
  r = yy + c.rv * cr;
  g = yy + c.gu * cb + c.gv * cr;
  b = yy + c.bu * cb;
}

// R, G, B 0–255 → Y and unrounded Cb, Cr (8-bit scale).
VPIPE_HD void rgb_to_yuv(const ColorCoefs& c, float r, float g, float b, float& y, float& u,
                         float& v) {
  y = c.y_off + c.yr * r + c.yg * g + c.yb * b;
  u = 128.f + c.ur * r + c.ug * g + c.ub * b;
  v = 128.f + c.vr * r + c.vg * g + c.vb * b;
}

// ---- chroma siting: the one rule for every 4:2:0 conversion ---------------------------------

// Chroma sample k sits at luma coordinate 2k + offset (in luma samples, each axis).
struct ChromaOffset {
  float x, y;
};
VPIPE_HD ChromaOffset chroma_offset(ChromaSiting s) {
  const bool left =
      s == ChromaSiting::kLeft || s == ChromaSiting::kTopLeft || s == ChromaSiting::kBottomLeft;
  const bool top = s == ChromaSiting::kTopLeft || s == ChromaSiting::kTop;
  const bool bottom = s == ChromaSiting::kBottomLeft || s == ChromaSiting::kBottom;
  return {left ? 0.f : 0.5f, top ? 0.f : (bottom ? 1.f : 0.5f)};
}

// Up (4:2:0 → full): the chroma plane's coordinate of luma coordinate `luma` (fractional where
// resized), for a bilinear sample between samples floor(c) and floor(c) + 1.
VPIPE_HD float chroma_coord(float luma, float offset) { return (luma - offset) * 0.5f; }

// One bilinear tap pair: samples k0 and k1 (clamped to 0..n-1, the edge repeated, as zimg),
// weight t on k1.
struct ChromaTaps {
  int k0, k1;
  float t;
};
VPIPE_HD int clamp_index(int k, int n) { return k < 0 ? 0 : (k > n - 1 ? n - 1 : k); }
VPIPE_HD ChromaTaps chroma_taps(float c, int n) {
  const float f = floorf(c);
  const int k = static_cast<int>(f);
  return {clamp_index(k, n), clamp_index(k + 1, n), c - f};
}

// Down (full → 4:2:0): luma sample i's weight in chroma sample k, zimg's bilinear (a triangle
// two luma samples wide on each side), normalised: the taps i = 2k-1 … 2k+2 sum to 1.
VPIPE_HD float chroma_weight(int i, int k, float offset) {
  float d = static_cast<float>(i - 2 * k) - offset;
  d = d < 0.f ? -d : d;
  return d < 2.f ? (1.f - d * 0.5f) * 0.5f : 0.f;
}

// The chroma (Cb, Cr) at luma coordinate (x, y) of a cw × ch chroma plane: `at(k, j, uv)` reads
// sample (k, j).
template <class At>
VPIPE_HD void upsample_chroma(float x, float y, int cw, int ch, ChromaOffset o, const At& at,
                              float (&uv)[2]) {
  const ChromaTaps h = chroma_taps(chroma_coord(x, o.x), cw);
  const ChromaTaps v = chroma_taps(chroma_coord(y, o.y), ch);
  float a[2], b[2], c[2], d[2];
  at(h.k0, v.k0, a);
  at(h.k1, v.k0, b);
  at(h.k0, v.k1, c);
  at(h.k1, v.k1, d);
  for (int i = 0; i < 2; ++i)
    uv[i] =
        (1.f - v.t) * ((1.f - h.t) * a[i] + h.t * b[i]) + v.t * ((1.f - h.t) * c[i] + h.t * d[i]);
}

// Chroma sample (k, j) from the full-resolution Cb, Cr: `at(x, y, uv)` gives luma pixel (x, y)'s
// (the caller clamps x and y to the picture, repeating its edges).
template <class At>
VPIPE_HD void downsample_chroma(int k, int j, ChromaOffset o, const At& at, float (&uv)[2]) {
  uv[0] = uv[1] = 0.f;
  for (int y = 2 * j - 1; y <= 2 * j + 2; ++y) {
    const float wy = chroma_weight(y, j, o.y);
    if (wy == 0.f) continue;
    for (int x = 2 * k - 1; x <= 2 * k + 2; ++x) {
      const float w = wy * chroma_weight(x, k, o.x);
      if (w == 0.f) continue;
      float c[2];
      at(x, y, c);
      uv[0] += w * c[0];
      uv[1] += w * c[1];
    }
  }
}

// The area sample's footprint on the chroma plane is the luma footprint halved and moved by
// this (chroma samples; 0 for centre siting): one rule with the bilinear sample's.
VPIPE_HD float chroma_area_shift(float offset) { return 0.25f - 0.5f * offset; }

// One 16-bit little-endian P010 sample (10 bits in the high bits) on the
// 8-bit scale of its range, unrounded: luma 1023 is 255 at full range, and
// chroma keeps its neutral 512 at 128.
VPIPE_HD float p010_luma(const ColorCoefs& c, unsigned v10) {
  return static_cast<float>(v10) * c.p010_scale;
}
VPIPE_HD float p010_chroma(const ColorCoefs& c, unsigned v10) {
  return (static_cast<float>(v10) - 512.f) * c.p010_scale + 128.f;
}
VPIPE_HD unsigned p010_word(const std::uint8_t* p) { return (p[0] | (p[1] << 8)) >> 6; }

// Alpha overlay of one pixel: `over` (RGBA, or null outside the overlay) on
// `base` (RGB/RGBA) into `dst`; dst keeps base's alpha.
VPIPE_HD void overlay_pixel(const std::uint8_t* base, const std::uint8_t* over, std::uint8_t* dst,
                            int channels, float opacity) {
  const float a = over ? over[3] / 255.f * opacity : 0.f;
  for (int c = 0; c < 3; ++c) dst[c] = clamp_u8(base[c] * (1.f - a) + (over ? over[c] : 0) * a);
  if (channels == 4) dst[3] = base[3];
}

}  // namespace vpipe
