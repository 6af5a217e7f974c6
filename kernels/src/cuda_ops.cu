// CUDA filter kernels (see cuda_ops.hpp for the contracts).
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>

#include "contracts.hpp"
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/memory/device_resource.hpp"
#include "vpipe/memory/errors.hpp"

namespace vpipe::cuda {

namespace {

// NVTX range for one launch; the debug switch synchronizes and checks after it.
class LaunchScope {
 public:
  LaunchScope(const char* name, cudaStream_t stream) : name_(name), stream_(stream) {
    nvtxRangePushA(name);
  }
  ~LaunchScope() noexcept(false) {
    nvtxRangePop();
    if (std::uncaught_exceptions()) return;
    const cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) detail::throw_cuda_error(launch, name_, __FILE__, __LINE__);
    if (debug_sync()) {
      const cudaError_t run = cudaStreamSynchronize(stream_);
      if (run != cudaSuccess) detail::throw_cuda_error(run, name_, __FILE__, __LINE__);
    }
  }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  static bool debug_sync() {
    static const bool on = [] {
      const char* v = std::getenv("VPIPE_DEBUG_SYNC");
      return v && std::string(v) == "1";
    }();
    return on;
  }
  const char* name_;
  cudaStream_t stream_;
};

struct Plane {
  std::uint8_t* data;
  int width, height, channels;
  std::size_t pitch;
  bool aligned4;  // every row starts 4-byte aligned: whole RGBA pixels can be stored at once
  __device__ std::uint8_t* row(int y) const { return data + static_cast<std::size_t>(y) * pitch; }
};
Plane dev(const PlaneView& p) {
  return {p.data, p.width, p.height, p.channels, p.pitch,
          reinterpret_cast<std::uintptr_t>(p.data) % 4 == 0 && p.pitch % 4 == 0};
}

dim3 grid2d(int w, int h, dim3 block) {
  return dim3((static_cast<unsigned>(w) + block.x - 1) / block.x,
              (static_cast<unsigned>(h) + block.y - 1) / block.y);
}

// Conversions without the int/float conversion unit, which runs at a
// quarter of the FP32 rate on the H200 and bounded the colour, resize and
// Sobel kernels: a float built from 2^23's bit pattern, and back.
// exact_f(n): n (< 2^23) as a float. to_u8(v): clamp_u8(v) bit for bit
// (clamped, + 0.5, truncated: adding 2^23 rounding toward zero leaves the
// integer in the low mantissa bits).
__device__ __forceinline__ float exact_f(std::uint32_t n) {
  return __uint_as_float(0x4B000000u | n) - 8388608.f;
}
__device__ __forceinline__ std::uint32_t to_u8(float v) {
  v = fminf(fmaxf(v, 0.f), 255.f);
  return __float_as_uint(__fadd_rz(v + 0.5f, 8388608.f)) & 0xFFu;
}

__device__ __forceinline__ void store_rgb(const Plane& o, int x, int y, float r, float g, float b) {
  std::uint8_t* p = o.row(y) + x * o.channels;
  if (o.channels == 4 && o.aligned4) {  // one 32-bit store instead of four byte stores
    *reinterpret_cast<uchar4*>(p) = make_uchar4(to_u8(r), to_u8(g), to_u8(b), 255);
    return;
  }
  p[0] = to_u8(r);
  p[1] = to_u8(g);
  p[2] = to_u8(b);
  if (o.channels == 4) p[3] = 255;
}

// ---- colour ------------------------------------------------------------------
// Each op converts one 2×2 block (its chroma sample read once for four
// pixels) at any alignment, and, where every plane's rows allow 8-/16-byte
// accesses, four blocks (8 pixels × 2 rows) with vector loads and stores: the
// byte-at-a-time version ran at 37–54 % of the copy peak at 4K (RESULTS).

// Byte i of w as a float without a conversion instruction: 2^23 + byte, minus 2^23.
__device__ __forceinline__ float byte_f(std::uint32_t w, int i) {
  return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7650 + i)) - 8388608.f;
}
__device__ __forceinline__ std::uint32_t pack4(std::uint32_t a, std::uint32_t b, std::uint32_t c,
                                               std::uint32_t d) {
  return a | b << 8 | c << 16 | d << 24;
}
bool aligned(const PlaneView& p, std::size_t n) {
  return reinterpret_cast<std::uintptr_t>(p.data) % n == 0 && p.pitch % n == 0;
}

// kN (4 or 8) consecutive RGB(A) pixels from registers, packed into words:
// RGBA as 16-byte stores; RGB (3·kN bytes) as 8-byte stores for 8 pixels,
// 4-byte ones for 4.
template <int kCh, int kN>
__device__ __forceinline__ void store_rgb_px(std::uint8_t* p, const float (&r)[kN], const float (&g)[kN],
                                             const float (&b)[kN]) {
  constexpr int kWords = kN * kCh / 4;
  std::uint32_t w[kWords] = {};
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const std::uint32_t c[4] = {to_u8(r[i]), to_u8(g[i]), to_u8(b[i]), 255};
#pragma unroll
    for (int k = 0; k < kCh; ++k) w[(kCh * i + k) / 4] |= c[k] << (8 * ((kCh * i + k) % 4));
  }
  if constexpr (kCh == 4) {
#pragma unroll
    for (int q = 0; q < kWords / 4; ++q)
      reinterpret_cast<uint4*>(p)[q] = make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
  } else if constexpr (kN == 8) {
#pragma unroll
    for (int q = 0; q < kWords / 2; ++q) reinterpret_cast<uint2*>(p)[q] = make_uint2(w[2 * q], w[2 * q + 1]);
  } else {
#pragma unroll
    for (int q = 0; q < kWords; ++q) reinterpret_cast<std::uint32_t*>(p)[q] = w[q];
  }
}
template <int kCh>
__device__ __forceinline__ void load_rgb8(const std::uint8_t* p, float (&r)[8], float (&g)[8], float (&b)[8]) {
  std::uint32_t w[2 * kCh];
#pragma unroll
  for (int q = 0; q < kCh / 2; ++q) {  // 4 → two uint4, 3 → one and a half: three uint2
    if constexpr (kCh == 4) {
      const uint4 v = reinterpret_cast<const uint4*>(p)[q];
      w[4 * q] = v.x, w[4 * q + 1] = v.y, w[4 * q + 2] = v.z, w[4 * q + 3] = v.w;
    }
  }
  if constexpr (kCh == 3) {
#pragma unroll
    for (int q = 0; q < 3; ++q) {
      const uint2 v = reinterpret_cast<const uint2*>(p)[q];
      w[2 * q] = v.x, w[2 * q + 1] = v.y;
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    r[i] = byte_f(w[(kCh * i) / 4], (kCh * i) % 4);
    g[i] = byte_f(w[(kCh * i + 1) / 4], (kCh * i + 1) % 4);
    b[i] = byte_f(w[(kCh * i + 2) / 4], (kCh * i + 2) % 4);
  }
}

// 4:2:0 (NV12 when kSemi, else planar U and V) → RGB(A).
template <bool kSemi, int kCh>
struct Yuv420ToRgb {
  Plane y, u, v, rgb;
  ColorCoefs c;
  bool vec;
  __device__ void block(int cx, int cy) const {
    float cu, cv;
    if (kSemi) {
      const std::uint8_t* p = u.row(cy) + 2 * cx;
      cu = p[0];
      cv = p[1];
    } else {
      cu = u.row(cy)[cx];
      cv = v.row(cy)[cx];
    }
    for (int dy = 0; dy < 2 && 2 * cy + dy < y.height; ++dy)
      for (int dx = 0; dx < 2 && 2 * cx + dx < y.width; ++dx) {
        const int xx = 2 * cx + dx, yy = 2 * cy + dy;
        float r, g, b;
        yuv_to_rgb(c, y.row(yy)[xx], cu, cv, r, g, b);
        store_rgb(rgb, xx, yy, r, g, b);
      }
  }
  __device__ void group8(int x, int cy) const {
    float cu[4], cv[4];
    if (kSemi) {
      const uint2 w = *reinterpret_cast<const uint2*>(u.row(cy) + x);
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const std::uint32_t h = k ? w.y : w.x;
        cu[2 * k] = byte_f(h, 0), cv[2 * k] = byte_f(h, 1), cu[2 * k + 1] = byte_f(h, 2), cv[2 * k + 1] = byte_f(h, 3);
      }
    } else {
      const std::uint32_t wu = *reinterpret_cast<const std::uint32_t*>(u.row(cy) + x / 2);
      const std::uint32_t wv = *reinterpret_cast<const std::uint32_t*>(v.row(cy) + x / 2);
#pragma unroll
      for (int k = 0; k < 4; ++k) cu[k] = byte_f(wu, k), cv[k] = byte_f(wv, k);
    }
#pragma unroll
    for (int dy = 0; dy < 2; ++dy) {
      const uint2 wy = *reinterpret_cast<const uint2*>(y.row(2 * cy + dy) + x);
      float r[8], g[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
        yuv_to_rgb(c, byte_f(i < 4 ? wy.x : wy.y, i % 4), cu[i / 2], cv[i / 2], r[i], g[i], b[i]);
      store_rgb_px<kCh, 8>(rgb.row(2 * cy + dy) + kCh * x, r, g, b);
    }
  }
};

// RGB(A) → 4:2:0; chroma is the mean of the block's four (edges repeat).
template <bool kSemi, int kCh>
struct RgbToYuv420 {
  Plane rgb, y, u, v;
  ColorCoefs c;
  bool vec;
  __device__ void block(int cx, int cy) const {
    float su = 0, sv = 0;
    for (int dy = 0; dy < 2; ++dy)
      for (int dx = 0; dx < 2; ++dx) {
        const int x = min(2 * cx + dx, y.width - 1), yy = min(2 * cy + dy, y.height - 1);
        const std::uint8_t* p = rgb.row(yy) + x * kCh;
        float fy, fu, fv;
        rgb_to_yuv(c, p[0], p[1], p[2], fy, fu, fv);
        if (2 * cx + dx < y.width && 2 * cy + dy < y.height) y.row(yy)[x] = to_u8(fy);
        su += fu;
        sv += fv;
      }
    if (kSemi) {
      std::uint8_t* p = u.row(cy) + 2 * cx;
      p[0] = to_u8(su / 4);
      p[1] = to_u8(sv / 4);
    } else {
      u.row(cy)[cx] = to_u8(su / 4);
      v.row(cy)[cx] = to_u8(sv / 4);
    }
  }
  __device__ void group8(int x, int cy) const {
    float su[4] = {}, sv[4] = {};
#pragma unroll
    for (int dy = 0; dy < 2; ++dy) {
      float r[8], g[8], b[8];
      load_rgb8<kCh>(rgb.row(2 * cy + dy) + kCh * x, r, g, b);
      std::uint32_t out[2] = {};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        float fy, fu, fv;
        rgb_to_yuv(c, r[i], g[i], b[i], fy, fu, fv);
        out[i / 4] |= static_cast<std::uint32_t>(to_u8(fy)) << (8 * (i % 4));
        su[i / 2] += fu;
        sv[i / 2] += fv;
      }
      *reinterpret_cast<uint2*>(y.row(2 * cy + dy) + x) = make_uint2(out[0], out[1]);
    }
    std::uint32_t cu[4], cv[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) cu[k] = to_u8(su[k] / 4), cv[k] = to_u8(sv[k] / 4);
    if (kSemi) {
      *reinterpret_cast<uint2*>(u.row(cy) + x) =
          make_uint2(pack4(cu[0], cv[0], cu[1], cv[1]), pack4(cu[2], cv[2], cu[3], cv[3]));
    } else {
      *reinterpret_cast<std::uint32_t*>(u.row(cy) + x / 2) = pack4(cu[0], cu[1], cu[2], cu[3]);
      *reinterpret_cast<std::uint32_t*>(v.row(cy) + x / 2) = pack4(cv[0], cv[1], cv[2], cv[3]);
    }
  }
};

// P010 (16-bit samples, 10 bits high) → RGB(A).
template <int kCh>
struct P010ToRgb {
  Plane y, uv, rgb;
  ColorCoefs c;
  bool vec;
  __device__ void block(int cx, int cy) const {
    const std::uint8_t* cp = uv.row(cy) + 4 * cx;
    const float cu = p010_sample(cp), cv = p010_sample(cp + 2);
    for (int dy = 0; dy < 2 && 2 * cy + dy < y.height; ++dy)
      for (int dx = 0; dx < 2 && 2 * cx + dx < y.width; ++dx) {
        const int xx = 2 * cx + dx, yy = 2 * cy + dy;
        float r, g, b;
        yuv_to_rgb(c, p010_sample(y.row(yy) + 2 * xx), cu, cv, r, g, b);
        store_rgb(rgb, xx, yy, r, g, b);
      }
  }
  // The two 16-bit samples of a little-endian word, 10-bit values on the 8-bit scale.
  __device__ static float lo10(std::uint32_t w) { return exact_f((w & 0xFFFFu) >> 6) * 0.25f; }
  __device__ static float hi10(std::uint32_t w) { return exact_f(w >> 22) * 0.25f; }
  __device__ void group8(int x, int cy) const {
    const uint4 cw = *reinterpret_cast<const uint4*>(uv.row(cy) + 2 * x);
    const std::uint32_t cws[4] = {cw.x, cw.y, cw.z, cw.w};
#pragma unroll
    for (int dy = 0; dy < 2; ++dy) {
      const uint4 yw = *reinterpret_cast<const uint4*>(y.row(2 * cy + dy) + 2 * x);
      const std::uint32_t yws[4] = {yw.x, yw.y, yw.z, yw.w};
      float r[8], g[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
        yuv_to_rgb(c, i % 2 ? hi10(yws[i / 2]) : lo10(yws[i / 2]), lo10(cws[i / 2]), hi10(cws[i / 2]),
                   r[i], g[i], b[i]);
      store_rgb_px<kCh, 8>(rgb.row(2 * cy + dy) + kCh * x, r, g, b);
    }
  }
};

// One thread per 8 pixels × 2 rows: vector accesses when op.vec and the group
// is whole, else (edges, unaligned planes) the op's four 2×2 blocks.
template <class Op>
__global__ void group8_kernel(const __grid_constant__ Op op, int width, int height) {
  const int x = 8 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int cy = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= width || 2 * cy >= height) return;
  if (op.vec && x + 8 <= width && 2 * cy + 2 <= height) {
    op.group8(x, cy);
    return;
  }
  for (int cx = x / 2; cx < min(x / 2 + 4, (width + 1) / 2); ++cx) op.block(cx, cy);
}

template <class Op>
void launch_group8(const Op& op, int width, int height, cudaStream_t stream) {
  const dim3 block(32, 8);
  group8_kernel<<<grid2d((width + 7) / 8, (height + 1) / 2, block), block, 0, stream>>>(op, width, height);
}


// ---- geometry ------------------------------------------------------------------

// floor(f) as an int and f − floor(f), for |f| < 2^22, without the
// conversion unit: 1.5·2^23 + f rounded down is 1.5·2^23 + floor(f), whose
// bit pattern counts up by one per integer.
__device__ __forceinline__ void floor_split(float f, int& i, float& frac) {
  const float r = __fadd_rd(f, 12582912.f);
  i = __float_as_int(r) - 0x4B400000;
  frac = f - (r - 12582912.f);
}

// The neighbours and weights of one bilinear sample (OpenCV's convention:
// clamped neighbours), set up once and used for every channel.
struct Bilinear {
  int xa, xb;
  const std::uint8_t *ra, *rb;
  float ax, ay;
  __device__ Bilinear(const Plane& p, float fx, float fy) {
    int x0, y0;
    floor_split(fx, x0, ax);
    floor_split(fy, y0, ay);
    xa = min(max(x0, 0), p.width - 1), xb = min(max(x0 + 1, 0), p.width - 1);
    ra = p.row(min(max(y0, 0), p.height - 1));
    rb = p.row(min(max(y0 + 1, 0), p.height - 1));
  }
  // Channel k of a plane with `channels` interleaved.
  __device__ float operator()(int channels, int k) const {
    return (1 - ay) * ((1 - ax) * exact_f(ra[xa * channels + k]) + ax * exact_f(ra[xb * channels + k])) +
           ay * ((1 - ax) * exact_f(rb[xa * channels + k]) + ax * exact_f(rb[xb * channels + k]));
  }
};

enum class ResizeMode { kNearest, kBilinear, kAreaInt };

// Four consecutive output bytes (1–4 pixels, kCh channels) per thread, one
// 32-bit store where the row allows: per-thread set-up is shared and the
// stores are four times fewer than byte by byte.
template <int kCh, ResizeMode kMode>
__global__ void resize4_kernel(Plane s, Plane d, float sx, float sy, double dsx, double dsy, int kx, int ky) {
  const int e0 = 4 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int row_elems = d.width * kCh;
  if (e0 >= row_elems || y >= d.height) return;
  std::uint8_t v[4] = {};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int e = e0 + j, x = e / kCh, c = e % kCh;
    if (e >= row_elems) break;
    if constexpr (kMode == ResizeMode::kNearest) {
      const int xs = min(static_cast<int>(floor(x * dsx)), s.width - 1);
      const int ys = min(static_cast<int>(floor(y * dsy)), s.height - 1);
      v[j] = s.row(ys)[xs * kCh + c];
    } else if constexpr (kMode == ResizeMode::kBilinear) {
      const Bilinear b(s, (x + 0.5f) * sx - 0.5f, (y + 0.5f) * sy - 0.5f);
      v[j] = to_u8(b(kCh, c));
    } else {  // area, whole-number ratios: the mean of a kx × ky block
      int sum = 0;
      for (int r = 0; r < ky; ++r) {
        const std::uint8_t* row = s.row(y * ky + r) + x * kx * kCh + c;
        for (int q = 0; q < kx; ++q) sum += row[q * kCh];
      }
      v[j] = to_u8(exact_f(static_cast<std::uint32_t>(sum)) / static_cast<float>(kx * ky));
    }
  }
  std::uint8_t* out = d.row(y) + e0;
  if (d.aligned4 && e0 + 4 <= row_elems) {
    *reinterpret_cast<std::uint32_t*>(out) = v[0] | v[1] << 8 | v[2] << 16 | static_cast<std::uint32_t>(v[3]) << 24;
  } else {
    for (int j = 0; j < 4 && e0 + j < row_elems; ++j) out[j] = v[j];
  }
}

// Exactly half size in both directions, bilinear or area: both are the mean
// of each 2×2 block, (a + b + c + d + 2) / 4 (the general kernels round the
// same sum the same way). Four output bytes per thread from two 8-byte loads
// per source row; 1-, 2- and 4-byte pixels.
template <int kCh>
__global__ void half2x2_kernel(Plane s, Plane d) {
  const int e0 = 4 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int row_elems = d.width * kCh;
  if (e0 >= row_elems || y >= d.height) return;
  const std::uint8_t* r0 = s.row(2 * y);
  const std::uint8_t* r1 = s.row(2 * y + 1);
  std::uint8_t* out = d.row(y) + e0;
  auto mean = [](int a, int b, int c, int e) { return static_cast<std::uint32_t>((a + b + c + e + 2) >> 2); };
  if (e0 + 4 <= row_elems) {  // source bytes 2*e0 .. 2*e0+7 of both rows
    const uint2 a = *reinterpret_cast<const uint2*>(r0 + 2 * e0);
    const uint2 b = *reinterpret_cast<const uint2*>(r1 + 2 * e0);
    auto byte = [](uint2 w, int i) { return static_cast<int>(((i < 4 ? w.x : w.y) >> (8 * (i % 4))) & 0xFF); };
    std::uint32_t v = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = 2 * j - j % kCh;  // this byte's channel in the first pixel of its pair
      v |= mean(byte(a, i), byte(a, i + kCh), byte(b, i), byte(b, i + kCh)) << (8 * j);
    }
    *reinterpret_cast<std::uint32_t*>(out) = v;
    return;
  }
  for (int j = 0; e0 + j < row_elems; ++j) {
    const int i = 2 * (e0 + j) - (e0 + j) % kCh;
    out[j] = static_cast<std::uint8_t>(mean(r0[i], r0[i + kCh], r1[i], r1[i + kCh]));
  }
}

// Pad: 16 destination bytes per thread, each written once: fill, or the
// source's bytes (16 at a time where they line up), or a mix at the edges.
__global__ void pad16_kernel(Plane s, Plane d, int x, int y, std::uint8_t fill) {
  const int o = 16 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int yy = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int rb = d.width * d.channels;
  if (o >= rb || yy >= d.height) return;
  const int sy = yy - y, sx0 = x * d.channels, sx1 = (x + s.width) * d.channels;
  std::uint8_t* out = d.row(yy) + o;
  const bool whole = o + 16 <= rb;
  const bool touches = sy >= 0 && sy < s.height && o + 16 > sx0 && o < sx1;
  if (touches) {
    const std::uint8_t* in = s.row(sy);
    if (whole && o >= sx0 && o + 16 <= sx1 && reinterpret_cast<std::uintptr_t>(in + (o - sx0)) % 16 == 0) {
      *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(in + (o - sx0));
      return;
    }
    for (int k = 0; k < 16 && o + k < rb; ++k)
      out[k] = o + k >= sx0 && o + k < sx1 ? in[o + k - sx0] : fill;
    return;
  }
  if (whole) {
    const std::uint32_t f = fill * 0x01010101u;
    *reinterpret_cast<uint4*>(out) = make_uint4(f, f, f, f);
    return;
  }
  for (int k = 0; o + k < rb; ++k) out[k] = fill;
}

template <int kCh>
void launch_resize4(const PlaneView& src, const PlaneView& dst, ResizeMode mode, double sx, double sy,
                    cudaStream_t stream) {
  const dim3 block(32, 8), grid = grid2d((dst.width * kCh + 3) / 4, dst.height, block);
  const auto fx = static_cast<float>(sx), fy = static_cast<float>(sy);
  const int kx = static_cast<int>(sx), ky = static_cast<int>(sy);
  if (mode == ResizeMode::kNearest)
    resize4_kernel<kCh, ResizeMode::kNearest><<<grid, block, 0, stream>>>(dev(src), dev(dst), fx, fy, sx, sy, kx, ky);
  else if (mode == ResizeMode::kBilinear)
    resize4_kernel<kCh, ResizeMode::kBilinear><<<grid, block, 0, stream>>>(dev(src), dev(dst), fx, fy, sx, sy, kx, ky);
  else
    resize4_kernel<kCh, ResizeMode::kAreaInt><<<grid, block, 0, stream>>>(dev(src), dev(dst), fx, fy, sx, sy, kx, ky);
}

// Each output pixel: the source pixels its footprint covers, weighted by overlap.
__global__ void resize_area_kernel(Plane s, Plane d, double sx, double sy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  const double x0 = x * sx, x1 = min((x + 1) * sx, static_cast<double>(s.width));
  const double y0 = y * sy, y1 = min((y + 1) * sy, static_cast<double>(s.height));
  float acc[4] = {0, 0, 0, 0};
  for (int ys = static_cast<int>(floor(y0)); ys < static_cast<int>(ceil(y1)); ++ys) {
    const float wy = static_cast<float>(min(ys + 1.0, y1) - max(static_cast<double>(ys), y0));
    const std::uint8_t* row = s.row(ys);
    for (int xs = static_cast<int>(floor(x0)); xs < static_cast<int>(ceil(x1)); ++xs) {
      const float w = wy * static_cast<float>(min(xs + 1.0, x1) - max(static_cast<double>(xs), x0));
      for (int ch = 0; ch < s.channels; ++ch) acc[ch] += w * row[xs * s.channels + ch];
    }
  }
  const float inv = static_cast<float>(1.0 / ((x1 - x0) * (y1 - y0)));
  for (int ch = 0; ch < d.channels; ++ch) d.row(y)[x * d.channels + ch] = to_u8(acc[ch] * inv);
}

__global__ void flip_kernel(Plane s, Plane d, bool h, bool v) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  const int xs = h ? s.width - 1 - x : x, ys = v ? s.height - 1 - y : y;
  if (d.channels == 4 && s.aligned4 && d.aligned4) {  // whole pixels
    *reinterpret_cast<std::uint32_t*>(d.row(y) + 4 * x) =
        *reinterpret_cast<const std::uint32_t*>(s.row(ys) + 4 * xs);
    return;
  }
  for (int ch = 0; ch < d.channels; ++ch) d.row(y)[x * d.channels + ch] = s.row(ys)[xs * s.channels + ch];
}

// ---- blur --------------------------------------------------------------------

constexpr int kMaxRadius = 192;
struct GaussKernel {
  int radius;
  float w[2 * kMaxRadius + 1];
};

__device__ __forceinline__ int reflect101(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
  return i;
}

// The two-pass path, for radii above kMaxFixedRadius and for blurs in place
// (the one-pass kernel below is the common case): the horizontal pass writes
// floats to a scratch buffer, the vertical pass reads them back. Radii up to
// kMaxFixedRadius use the one-pass kernel.
constexpr int kStrip = 8;
constexpr int kMaxFixedRadius = 8;

// Horizontal pass: u8 → float (row-major, width*channels floats per row).
// A block stages its rows' pixels plus the 2r halo in shared memory with
// coalesced loads (borders reflected there), then each thread makes one
// output pixel from shared memory: global reads and writes stay coalesced.
constexpr int kHTile = 128, kHRows = 4;
// __grid_constant__: the weights are indexed at run time; without it the
// compiler may copy the whole 1.5 KB parameter into each thread's local memory.
__global__ void blur_h_kernel(Plane s, float* tmp, const __grid_constant__ GaussKernel k) {
  extern __shared__ std::uint8_t tile[];
  const int r = k.radius;
  const int ch = s.channels, span = (kHTile + 2 * r) * ch;
  const int x_base = blockIdx.x * kHTile;
  const int y = blockIdx.y * kHRows + threadIdx.y;
  std::uint8_t* trow = tile + threadIdx.y * span;
  if (y < s.height) {
    const std::uint8_t* row = s.row(y);
    for (int i = threadIdx.x; i < span; i += kHTile)
      trow[i] = row[reflect101(x_base - r + i / ch, s.width) * ch + i % ch];
  }
  __syncthreads();
  const int x = x_base + threadIdx.x;
  if (x >= s.width || y >= s.height) return;
  for (int c = 0; c < ch; ++c) {
    float acc = 0;
    for (int i = 0; i <= 2 * r; ++i) acc += k.w[i] * trow[(threadIdx.x + i) * ch + c];
    tmp[(static_cast<std::size_t>(y) * s.width + x) * ch + c] = acc;
  }
}

// Vertical pass: float → u8, kStrip consecutive rows per thread from a sliding
// window of kStrip + 2r inputs (each input loaded once per strip).
// amount != 0: unsharp mask, dst = orig + amount * (orig − blurred), in float.
__global__ void blur_v_kernel(const float* tmp, Plane d, const __grid_constant__ GaussKernel k,
                              Plane orig, float amount) {
  const int xb = blockIdx.x * blockDim.x + threadIdx.x;  // byte (pixel × channel) in the row
  const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * kStrip;
  const int row_elems = d.width * d.channels;
  if (xb >= row_elems || y0 >= d.height) return;
  const int r = k.radius;
  const bool interior = y0 - r >= 0 && y0 + kStrip + r <= d.height;
  float acc[kStrip] = {};
  for (int t = 0; t < kStrip + 2 * r; ++t) {
    const int ys = y0 - r + t;
    const float v = tmp[static_cast<std::size_t>(interior ? ys : reflect101(ys, d.height)) * row_elems + xb];
#pragma unroll
    for (int j = 0; j < kStrip; ++j) {
      const int i = t - j;
      if (i >= 0 && i <= 2 * r) acc[j] += k.w[i] * v;
    }
  }
#pragma unroll
  for (int j = 0; j < kStrip; ++j) {
    if (y0 + j >= d.height) break;
    float v = acc[j];
    if (amount != 0.f) {
      const float o = orig.row(y0 + j)[xb];
      v = o + amount * (o - v);
    }
    d.row(y0 + j)[xb] = to_u8(v);
  }
}

void launch_blur(const PlaneView& src, const PlaneView& dst, float* tmp, const GaussKernel& k,
                 float amount, cudaStream_t stream) {
  const dim3 hblock(kHTile, kHRows), vblock(64, 4);
  const std::size_t smem = static_cast<std::size_t>(kHRows) * (kHTile + 2 * k.radius) * src.channels;
  blur_h_kernel<<<grid2d(src.width, src.height, hblock), hblock, smem, stream>>>(dev(src), tmp, k);
  blur_v_kernel<<<grid2d(src.width * src.channels, (src.height + kStrip - 1) / kStrip, vblock),
                  vblock, 0, stream>>>(tmp, dev(dst), k, dev(src), amount);
}

GaussKernel gaussian_weights(double sigma) {
  GaussKernel k{};
  k.radius = static_cast<int>(std::ceil(3.0 * sigma));
  VPIPE_EXPECTS(k.radius <= kMaxRadius, "blur: sigma at most 64");
  double sum = 0;
  for (int i = -k.radius; i <= k.radius; ++i) sum += std::exp(-(i * i) / (2 * sigma * sigma));
  for (int i = -k.radius; i <= k.radius; ++i)
    k.w[i + k.radius] = static_cast<float>(std::exp(-(i * i) / (2 * sigma * sigma)) / sum);
  return k;
}


// ---- blur, one pass --------------------------------------------------------------
// Radii up to kMaxFixedRadius, 1–4 channels, source and destination apart:
// both passes in one kernel. A block stages its kTW-byte × kTH-row output tile
// plus the halo in shared memory as floats (borders reflected while staging,
// four bytes per load where rows allow), runs the horizontal taps into
// registers, writes them back over the tile, then runs the vertical taps for
// 4 bytes × kS rows per thread: no float intermediate in global memory, each
// output byte written once, four at a time. ncu showed the two-pass version
// compute-bound with the DRAM nearly idle (RESULTS, kernels section).
namespace blur_tile {
constexpr int kTW = 128, kTH = 32, kThreads = 256, kK = 8, kS = 4;
}


template <int R, int CH>
__global__ void __launch_bounds__(blur_tile::kThreads)
    blur_tile_kernel(Plane s, Plane d, const __grid_constant__ GaussKernel k, float amount) {
  using namespace blur_tile;
  constexpr int kHalo = R * CH, kHL = (kHalo + 3) & ~3, kWT = kHL + kTW + kHL, kRows = kTH + 2 * R;
  constexpr int kOff = kHL - kHalo, kWin = kOff + kK + 2 * kHalo, kNV = (kWin + 3) / 4;
  static_assert(kThreads == (kTW / 4) * (kTH / kS), "one vertical strip per thread");
  static_assert(kTW / kK == 16 && kRows % 2 == 0, "a warp's horizontal tasks: two rows of 16");
  // Row pitches (floats) of the staged tile and of the horizontal results, both
  // ≡ 4 mod 32: a row starts 16 bytes further round the banks than the one
  // above, so the 8 lanes of a 16-byte access phase (4 tasks from each of two
  // rows, 32 bytes apart) hit 8 different 16-byte bank groups. With pitches
  // ≡ 0 they met two by two (profiled: shared memory bounded the kernel).
  constexpr int kWP = kWT + ((36 - kWT % 32) % 32), kHP = kTW + 4;
  static_assert(kWP % 32 == 4 && kHP % 32 == 4 && kHP <= kWP, "conflict-free pitches");
  // +4: the last row's final float4 window load may run 3 floats past the tile (unused).
  __shared__ __align__(16) float tile[kRows * kWP + 4];
  const int tid = static_cast<int>(threadIdx.x);
  const int row_elems = s.width * CH;
  const int x0 = static_cast<int>(blockIdx.x) * kTW, y0 = static_cast<int>(blockIdx.y) * kTH;

  // 1. Stage rows y0-R .. y0+kTH+R, elements x0-kHL .. x0+kTW+kHL, as floats.
  // Interior blocks issue all their loads before the first store: the loads
  // are in flight together (one at a time, the staging was latency-bound).
  constexpr int kWordsPerRow = kWT / 4, kWords = kRows * kWordsPerRow;
  constexpr int kLoads = (kWords + kThreads - 1) / kThreads;
  if (s.aligned4 && x0 - kHL >= 0 && x0 + kTW + kHL <= row_elems) {
    std::uint32_t v[kLoads];
#pragma unroll
    for (int n = 0; n < kLoads; ++n) {
      const int i = tid + n * kThreads;
      if (i < kWords)
        v[n] = *reinterpret_cast<const std::uint32_t*>(
            s.row(reflect101(y0 - R + i / kWordsPerRow, s.height)) + x0 - kHL + 4 * (i % kWordsPerRow));
    }
#pragma unroll
    for (int n = 0; n < kLoads; ++n) {
      const int i = tid + n * kThreads;
      if (i < kWords)
        *reinterpret_cast<float4*>(&tile[i / kWordsPerRow * kWP + 4 * (i % kWordsPerRow)]) =
            make_float4(byte_f(v[n], 0), byte_f(v[n], 1), byte_f(v[n], 2), byte_f(v[n], 3));
    }
  } else {  // blocks at the left and right edges: reflected element by element
    for (int i = tid; i < kWords; i += kThreads) {
      const int r = i / kWordsPerRow, w = i % kWordsPerRow;
      const std::uint8_t* row = s.row(reflect101(y0 - R + r, s.height));
      float t[4];
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int e = x0 - kHL + 4 * w + b + 64 * CH;  // shifted ≥ 0 (kHL ≤ 32)
        t[b] = row[reflect101(e / CH - 64, s.width) * CH + e % CH];
      }
      *reinterpret_cast<float4*>(&tile[r * kWP + 4 * w]) = make_float4(t[0], t[1], t[2], t[3]);
    }
  }
  __syncthreads();

  // 2. Horizontal taps: kK consecutive outputs per task from a register window.
  // Task t: warp group m = t / 32 takes rows 2m and 2m+1; in each 8-lane
  // phase, lanes 0-3 take 4 neighbouring tasks of the first row and lanes
  // 4-7 the same of the second (see kWP).
  constexpr int kTasks = kRows * (kTW / kK), kPer = (kTasks + kThreads - 1) / kThreads;
  auto task = [](int t, int& r, int& e0) {
    const int l = t % 32;
    r = 2 * (t / 32) + (l % 8) / 4;
    e0 = kK * (4 * (l / 8) + l % 4);
  };
  float h[kPer][kK];
#pragma unroll
  for (int n = 0; n < kPer; ++n) {
    const int t = tid + n * kThreads;
    if (t >= kTasks) break;
    int r, e0;
    task(t, r, e0);
    float win[4 * kNV];
#pragma unroll
    for (int q = 0; q < kNV; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(&tile[r * kWP + e0 + 4 * q]);
      win[4 * q] = v.x, win[4 * q + 1] = v.y, win[4 * q + 2] = v.z, win[4 * q + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      float acc = 0;
#pragma unroll
      for (int i = 0; i <= 2 * R; ++i) acc += k.w[i] * win[kOff + j + i * CH];
      h[n][j] = acc;
    }
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < kPer; ++n) {  // rows of kHP floats, over the staged tile
    const int t = tid + n * kThreads;
    if (t >= kTasks) break;
    int r, e0;
    task(t, r, e0);
#pragma unroll
    for (int q = 0; q < kK / 4; ++q)
      *reinterpret_cast<float4*>(&tile[r * kHP + e0 + 4 * q]) =
          make_float4(h[n][4 * q], h[n][4 * q + 1], h[n][4 * q + 2], h[n][4 * q + 3]);
  }
  __syncthreads();

  // 3. Vertical taps: 4 elements × kS rows per thread, then 4 bytes per store.
  const int cg = tid % (kTW / 4), s0 = (tid / (kTW / 4)) * kS;
  float acc[kS][4] = {};
#pragma unroll
  for (int t = 0; t < kS + 2 * R; ++t) {
    const float4 v = *reinterpret_cast<const float4*>(&tile[(s0 + t) * kHP + 4 * cg]);
#pragma unroll
    for (int j = 0; j < kS; ++j) {
      if (t - j < 0 || t - j > 2 * R) continue;
      const float w = k.w[t - j];
      acc[j][0] += w * v.x, acc[j][1] += w * v.y, acc[j][2] += w * v.z, acc[j][3] += w * v.w;
    }
  }
  const int ex = x0 + 4 * cg;
  if (ex >= row_elems) return;
  const bool whole = ex + 4 <= row_elems;
#pragma unroll
  for (int j = 0; j < kS; ++j) {
    const int y = y0 + s0 + j;
    if (y >= d.height) break;
    if (amount != 0.f) {  // unsharp: orig + amount * (orig − blurred)
      const std::uint8_t* in = s.row(y) + ex;
      float orig[4];
      if (whole && s.aligned4) {
        const std::uint32_t v = *reinterpret_cast<const std::uint32_t*>(in);
#pragma unroll
        for (int b = 0; b < 4; ++b) orig[b] = byte_f(v, b);
      } else {
#pragma unroll
        for (int b = 0; b < 4; ++b) orig[b] = ex + b < row_elems ? in[b] : 0.f;
      }
#pragma unroll
      for (int b = 0; b < 4; ++b) acc[j][b] = orig[b] + amount * (orig[b] - acc[j][b]);
    }
    std::uint8_t* out = d.row(y) + ex;
    if (whole && d.aligned4) {
      *reinterpret_cast<std::uint32_t*>(out) = to_u8(acc[j][0]) | to_u8(acc[j][1]) << 8 |
                                               to_u8(acc[j][2]) << 16 |
                                               static_cast<std::uint32_t>(to_u8(acc[j][3])) << 24;
    } else {
#pragma unroll
      for (int b = 0; b < 4; ++b)
        if (ex + b < row_elems) out[b] = to_u8(acc[j][b]);
    }
  }
}

template <int R, int CH>
void launch_tile_blur(const PlaneView& src, const PlaneView& dst, const GaussKernel& k, float amount,
                      cudaStream_t stream) {
  using namespace blur_tile;
  const dim3 grid((static_cast<unsigned>(src.width) * CH + kTW - 1) / kTW,
                  (static_cast<unsigned>(src.height) + kTH - 1) / kTH);
  blur_tile_kernel<R, CH><<<grid, kThreads, 0, stream>>>(dev(src), dev(dst), k, amount);
}

template <int CH, int... R>
bool dispatch_tile_blur_r(std::integer_sequence<int, R...>, const PlaneView& src, const PlaneView& dst,
                          const GaussKernel& k, float amount, cudaStream_t stream) {
  return ((k.radius == R + 1 ? (launch_tile_blur<R + 1, CH>(src, dst, k, amount, stream), true) : false) || ...);
}

// false: not a case for the one-pass kernel (radius, channels, or src and dst overlap).
bool tile_blur(const PlaneView& src, const PlaneView& dst, const GaussKernel& k, float amount,
               cudaStream_t stream) {
  const auto* s0 = src.data;
  const auto* s1 = src.data + src.pitch * static_cast<std::size_t>(src.height - 1) + src.row_bytes();
  const auto* d0 = dst.data;
  const auto* d1 = dst.data + dst.pitch * static_cast<std::size_t>(dst.height - 1) + dst.row_bytes();
  if (k.radius < 1 || k.radius > kMaxFixedRadius || (s0 < d1 && d0 < s1)) return false;
  const auto radii = std::make_integer_sequence<int, kMaxFixedRadius>{};
  switch (src.channels) {
    case 1: return dispatch_tile_blur_r<1>(radii, src, dst, k, amount, stream);
    case 2: return dispatch_tile_blur_r<2>(radii, src, dst, k, amount, stream);
    case 3: return dispatch_tile_blur_r<3>(radii, src, dst, k, amount, stream);
    case 4: return dispatch_tile_blur_r<4>(radii, src, dst, k, amount, stream);
    default: return false;
  }
}


// ---- Sobel, overlay, P010 ------------------------------------------------------

// Sobel of element e (pixel e / c, channel e % c) of row y, reflect-101 borders.
__device__ __forceinline__ std::uint8_t sobel_at(const Plane& s, int e, int y) {
  const int c = s.channels, x = e / c, ch = e % c;
  const int xm = reflect101(x - 1, s.width) * c + ch, xp = reflect101(x + 1, s.width) * c + ch;
  const std::uint8_t* rm = s.row(reflect101(y - 1, s.height));
  const std::uint8_t* r0 = s.row(y);
  const std::uint8_t* rp = s.row(reflect101(y + 1, s.height));
  const int gx = (rm[xp] + 2 * r0[xp] + rp[xp]) - (rm[xm] + 2 * r0[xm] + rp[xm]);
  const int gy = (rp[xm] + 2 * rp[e] + rp[xp]) - (rm[xm] + 2 * rm[e] + rm[xp]);
  return to_u8(sqrtf(exact_f(static_cast<std::uint32_t>(gx * gx + gy * gy))));
}

// Four consecutive output bytes per thread. Inside the row (and with 4-byte
// aligned rows) the three rows' bytes e-4 .. e+7 come in as three words
// each, which holds both neighbours of every output for 1–4 channels.
template <int kCh>
__global__ void sobel4_kernel(Plane s, Plane d) {
  const int e0 = 4 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int row_elems = d.width * kCh;
  if (e0 >= row_elems || y >= d.height) return;
  std::uint8_t v[4] = {};
  if (s.aligned4 && e0 >= 4 && e0 + 8 <= row_elems) {
    const std::uint8_t* rows[3] = {s.row(reflect101(y - 1, s.height)), s.row(y),
                                   s.row(reflect101(y + 1, s.height))};
    int b[3][12];
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int q = 0; q < 3; ++q) {
        const std::uint32_t w = *reinterpret_cast<const std::uint32_t*>(rows[r] + e0 - 4 + 4 * q);
#pragma unroll
        for (int k = 0; k < 4; ++k) b[r][4 * q + k] = (w >> (8 * k)) & 0xFF;
      }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = 4 + j - kCh, p = 4 + j + kCh, o = 4 + j;
      const int gx = (b[0][p] + 2 * b[1][p] + b[2][p]) - (b[0][m] + 2 * b[1][m] + b[2][m]);
      const int gy = (b[2][m] + 2 * b[2][o] + b[2][p]) - (b[0][m] + 2 * b[0][o] + b[0][p]);
      v[j] = to_u8(sqrtf(exact_f(static_cast<std::uint32_t>(gx * gx + gy * gy))));
    }
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (e0 + j < row_elems) v[j] = sobel_at(s, e0 + j, y);
  }
  std::uint8_t* out = d.row(y) + e0;
  if (d.aligned4 && e0 + 4 <= row_elems) {
    *reinterpret_cast<std::uint32_t*>(out) = v[0] | v[1] << 8 | v[2] << 16 | static_cast<std::uint32_t>(v[3]) << 24;
  } else {
    for (int j = 0; j < 4 && e0 + j < row_elems; ++j) out[j] = v[j];
  }
}

// 16 bytes per thread for 1-, 2- and 4-byte pixels when rows are 16-byte
// aligned and a whole number of 16 bytes long: a horizontal flip reverses
// the pixels inside the 16 bytes it reads from the mirrored place.
template <int kCh>
__global__ void flip16_kernel(Plane s, Plane d, bool h, bool v) {
  const int o = 16 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int row_bytes = d.width * kCh;
  if (o >= row_bytes || y >= d.height) return;
  const std::uint8_t* in = s.row(v ? s.height - 1 - y : y);
  uint4 w = *reinterpret_cast<const uint4*>(in + (h ? row_bytes - 16 - o : o));
  if (h) {
    constexpr unsigned kSel = kCh == 1 ? 0x0123 : kCh == 2 ? 0x1032 : 0x3210;  // pixels in a word
    w = make_uint4(__byte_perm(w.w, 0, kSel), __byte_perm(w.z, 0, kSel), __byte_perm(w.y, 0, kSel),
                   __byte_perm(w.x, 0, kSel));
  }
  *reinterpret_cast<uint4*>(d.row(y) + o) = w;
}

// RGBA over RGBA, four pixels per thread with 16-byte accesses: outside the
// overlay's rectangle the base is copied as it is.
__global__ void overlay4_kernel(Plane base, Plane over, Plane d, int ox, int oy, float opacity) {
  const int x0 = 4 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x0 >= d.width || y >= d.height) return;
  uint4 w = *reinterpret_cast<const uint4*>(base.row(y) + 4 * x0);
  const int v = y - oy;
  if (v >= 0 && v < over.height && x0 + 4 > ox && x0 < ox + over.width) {
    std::uint32_t px[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int u = x0 + k - ox;
      if (u < 0 || u >= over.width) continue;
      std::uint8_t b[4], out[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) b[c] = static_cast<std::uint8_t>(px[k] >> (8 * c));
      overlay_pixel(b, over.row(v) + 4 * u, out, 4, opacity);
      px[k] = pack4(out[0], out[1], out[2], out[3]);
    }
    w = make_uint4(px[0], px[1], px[2], px[3]);
  }
  *reinterpret_cast<uint4*>(d.row(y) + 4 * x0) = w;
}

__global__ void overlay_kernel(Plane base, Plane over, Plane d, int ox, int oy, float opacity) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  const int u = x - ox, v = y - oy;
  const bool inside = u >= 0 && v >= 0 && u < over.width && v < over.height;
  overlay_pixel(base.row(y) + x * base.channels, inside ? over.row(v) + u * 4 : nullptr,
                d.row(y) + x * d.channels, d.channels, opacity);
}

// ---- pointwise -----------------------------------------------------------------

// Sixteen bytes per thread where rows allow 16-byte accesses, four where
// they allow 4, else one.
// A table-driven op reads its table from shared memory (lookups by pixel
// value would serialize in the constant cache); blocks stride over rows so
// the table is staged once per block, not once per row.
template <class Op>
__device__ __forceinline__ std::uint32_t op_word(const Op& op, std::uint32_t w, const std::uint8_t* t) {
  std::uint32_t out = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b)
    out |= static_cast<std::uint32_t>(op(static_cast<std::uint8_t>(w >> (8 * b)), t)) << (8 * b);
  return out;
}

template <class Op>
__global__ void pointwise_kernel(Plane s, Plane d, const __grid_constant__ Op op, int width_bytes) {
  __shared__ std::uint8_t table[256];
  if constexpr (Op::kTable) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) table[i] = op.lut[i];
    __syncthreads();
  }
  const std::size_t row_bytes = static_cast<std::size_t>(s.width) * s.channels;
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x * width_bytes;
  const std::size_t first = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * width_bytes;
  for (int y = blockIdx.y; y < s.height; y += gridDim.y) {
    const std::uint8_t* in = s.row(y);
    std::uint8_t* out = d.row(y);
    if (width_bytes == 16) {
      for (std::size_t i = first; i < row_bytes; i += step) {
        uint4 v = *reinterpret_cast<const uint4*>(in + i);
        v.x = op_word(op, v.x, table);
        v.y = op_word(op, v.y, table);
        v.z = op_word(op, v.z, table);
        v.w = op_word(op, v.w, table);
        *reinterpret_cast<uint4*>(out + i) = v;
      }
    } else if (width_bytes == 4) {
      for (std::size_t i = first; i < row_bytes; i += step)
        *reinterpret_cast<std::uint32_t*>(out + i) =
            op_word(op, *reinterpret_cast<const std::uint32_t*>(in + i), table);
    } else {
      for (std::size_t i = first; i < row_bytes; i += step) out[i] = op(in[i], table);
    }
  }
}

struct InvertOp {
  static constexpr bool kTable = false;
  std::uint8_t lut[1];
  __device__ std::uint8_t operator()(std::uint8_t v, const std::uint8_t*) const { return 255 - v; }
};
struct LutOp {
  static constexpr bool kTable = true;
  std::uint8_t lut[256];
  __device__ std::uint8_t operator()(std::uint8_t v, const std::uint8_t* table) const { return table[v]; }
};

template <class Op>
void launch_pointwise(const PlaneView& src, const PlaneView& dst, Op op, cudaStream_t stream) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "pointwise: planes differ in size");
  if (src.width == 0 || src.height == 0) return;
  const std::size_t row = src.row_bytes();
  auto fits = [&](std::size_t n) {
    return row % n == 0 && src.pitch % n == 0 && dst.pitch % n == 0 &&
           reinterpret_cast<std::uintptr_t>(src.data) % n == 0 &&
           reinterpret_cast<std::uintptr_t>(dst.data) % n == 0;
  };
  const int width_bytes = fits(16) ? 16 : fits(4) ? 4 : 1;
  const std::size_t per_block = 256 * static_cast<std::size_t>(width_bytes);
  const dim3 grid(static_cast<unsigned>((row + per_block - 1) / per_block),
                  static_cast<unsigned>(std::min(src.height, 512)));
  pointwise_kernel<<<grid, 256, 0, stream>>>(dev(src), dev(dst), op, width_bytes);
}

// ---- fused ---------------------------------------------------------------------

// Sampling of one plane in the fused pass: bilinear, nearest (resize_plane's
// floor(x * scale)), or area (the footprint's pixels weighted by overlap, as
// resize_area_kernel; only where the plane shrinks in both directions).
enum class Sample { kBilinear, kNearest, kArea };

struct Scale {
  float fx, fy;     // bilinear
  double dx, dy;    // nearest and area
};

__device__ __forceinline__ float area_sample(const Plane& p, int x, int y, double sx, double sy, int ch) {
  const double x0 = x * sx, x1 = min((x + 1) * sx, static_cast<double>(p.width));
  const double y0 = y * sy, y1 = min((y + 1) * sy, static_cast<double>(p.height));
  float acc = 0;
  for (int ys = static_cast<int>(floor(y0)); ys < static_cast<int>(ceil(y1)); ++ys) {
    const float wy = static_cast<float>(min(ys + 1.0, y1) - max(static_cast<double>(ys), y0));
    const std::uint8_t* row = p.row(ys);
    for (int xs = static_cast<int>(floor(x0)); xs < static_cast<int>(ceil(x1)); ++xs) {
      const float w = wy * static_cast<float>(min(xs + 1.0, x1) - max(static_cast<double>(xs), x0));
      acc += w * exact_f(row[xs * p.channels + ch]);
    }
  }
  return acc * static_cast<float>(1.0 / ((x1 - x0) * (y1 - y0)));
}

// Channels 0..n-1 of plane p at output pixel (x, y).
template <Sample kMode, int kN>
__device__ __forceinline__ void sample_plane(const Plane& p, int x, int y, Scale s, float (&out)[kN]) {
  if constexpr (kMode == Sample::kBilinear) {
    const Bilinear b(p, (x + 0.5f) * s.fx - 0.5f, (y + 0.5f) * s.fy - 0.5f);  // shared by the channels
#pragma unroll
    for (int k = 0; k < kN; ++k) out[k] = b(p.channels, k);
  } else if constexpr (kMode == Sample::kNearest) {
    const int xs = min(static_cast<int>(floor(x * s.dx)), p.width - 1);
    const int ys = min(static_cast<int>(floor(y * s.dy)), p.height - 1);
#pragma unroll
    for (int k = 0; k < kN; ++k) out[k] = exact_f(p.row(ys)[xs * p.channels + k]);
  } else {
#pragma unroll
    for (int k = 0; k < kN; ++k) out[k] = area_sample(p, x, y, s.dx, s.dy, k);
  }
}

template <Sample kY, Sample kC>
__global__ void nv12_resize_rgb_kernel(Plane y, Plane uv, Plane rgb, ColorCoefs c, Scale ys, Scale cs) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, yy = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= rgb.width || yy >= rgb.height) return;
  float fy[1], fc[2];
  sample_plane<kY>(y, x, yy, ys, fy);
  sample_plane<kC>(uv, x, yy, cs, fc);
  float r, g, b;
  yuv_to_rgb(c, fy[0], fc[0], fc[1], r, g, b);
  store_rgb(rgb, x, yy, r, g, b);
}

// The fused pass at exactly half size: the luma sample is the mean of a 2×2
// block and the chroma plane is already the output's size (its bilinear
// sample falls on a pixel), so 4 output pixels take two 8-byte luma loads
// per row, one 8-byte chroma load and one 16-byte (RGBA) store. The values
// are the general kernel's: (a + b + c + d) / 4 unrounded, chroma as it is.
template <int kCh>
__global__ void nv12_half_rgb_kernel(Plane y, Plane uv, Plane rgb, ColorCoefs c) {
  const int x0 = 4 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int yy = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x0 >= rgb.width || yy >= rgb.height) return;
  const std::uint8_t* r0 = y.row(2 * yy);
  const std::uint8_t* r1 = y.row(2 * yy + 1);
  const std::uint8_t* cr = uv.row(yy);
  if (x0 + 4 > rgb.width) {  // the row's ragged end
    for (int x = x0; x < rgb.width; ++x) {
      const float fy = (static_cast<float>(r0[2 * x] + r0[2 * x + 1] + r1[2 * x] + r1[2 * x + 1])) * 0.25f;
      float r, g, b;
      yuv_to_rgb(c, fy, cr[2 * x], cr[2 * x + 1], r, g, b);
      store_rgb(rgb, x, yy, r, g, b);
    }
    return;
  }
  const uint2 a = *reinterpret_cast<const uint2*>(r0 + 2 * x0);
  const uint2 b = *reinterpret_cast<const uint2*>(r1 + 2 * x0);
  const uint2 w = *reinterpret_cast<const uint2*>(cr + 2 * x0);
  float rr[4], gg[4], bb[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t la = k < 2 ? a.x : a.y, lb = k < 2 ? b.x : b.y, cw = k < 2 ? w.x : w.y;
    const int i = 2 * (k % 2);
    const float fy = (byte_f(la, i) + byte_f(la, i + 1) + byte_f(lb, i) + byte_f(lb, i + 1)) * 0.25f;
    yuv_to_rgb(c, fy, byte_f(cw, i), byte_f(cw, i + 1), rr[k], gg[k], bb[k]);
  }
  store_rgb_px<kCh, 4>(rgb.row(yy) + kCh * x0, rr, gg, bb);
}

}  // namespace

// ---- public API ------------------------------------------------------------------

void nv12_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_420(y, uv, rgb, 2);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::nv12_to_rgb", stream);
  const bool vec = aligned(y, 8) && aligned(uv, 8) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(Yuv420ToRgb<true, 4>{dev(y), dev(uv), dev(uv), dev(rgb), color_coefs(spec), vec}, y.width, y.height, stream);
  else
    launch_group8(Yuv420ToRgb<true, 3>{dev(y), dev(uv), dev(uv), dev(rgb), color_coefs(spec), vec}, y.width, y.height, stream);
}

void yuv420p_to_rgb(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                    const PlaneView& rgb, ColorSpec spec, cudaStream_t stream) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::yuv420p_to_rgb", stream);
  const bool vec = aligned(y, 8) && aligned(u, 4) && aligned(v, 4) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(Yuv420ToRgb<false, 4>{dev(y), dev(u), dev(v), dev(rgb), color_coefs(spec), vec}, y.width, y.height, stream);
  else
    launch_group8(Yuv420ToRgb<false, 3>{dev(y), dev(u), dev(v), dev(rgb), color_coefs(spec), vec}, y.width, y.height, stream);
}

void rgb_to_nv12(const PlaneView& rgb, const PlaneView& y, const PlaneView& uv, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_420(y, uv, rgb, 2);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::rgb_to_nv12", stream);
  const bool vec = aligned(y, 8) && aligned(uv, 8) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(RgbToYuv420<true, 4>{dev(rgb), dev(y), dev(uv), dev(uv), color_coefs(spec), vec}, y.width, y.height, stream);
  else
    launch_group8(RgbToYuv420<true, 3>{dev(rgb), dev(y), dev(uv), dev(uv), color_coefs(spec), vec}, y.width, y.height, stream);
}

void rgb_to_yuv420p(const PlaneView& rgb, const PlaneView& y, const PlaneView& u,
                    const PlaneView& v, ColorSpec spec, cudaStream_t stream) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::rgb_to_yuv420p", stream);
  const bool vec = aligned(y, 8) && aligned(u, 4) && aligned(v, 4) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(RgbToYuv420<false, 4>{dev(rgb), dev(y), dev(u), dev(v), color_coefs(spec), vec}, y.width, y.height, stream);
  else
    launch_group8(RgbToYuv420<false, 3>{dev(rgb), dev(y), dev(u), dev(v), color_coefs(spec), vec}, y.width, y.height, stream);
}

void resize_plane(const PlaneView& src, const PlaneView& dst, ref::Interp interp,
                  cudaStream_t stream) {
  VPIPE_EXPECTS(src.channels == dst.channels && src.channels <= 4, "resize: channel counts differ");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::resize_plane", stream);
  const double sx = static_cast<double>(src.width) / dst.width;
  const double sy = static_cast<double>(src.height) / dst.height;
  ResizeMode mode = interp == ref::Interp::kNearest ? ResizeMode::kNearest : ResizeMode::kBilinear;
  const int ch = src.channels;
  if (interp != ref::Interp::kNearest && src.width == 2 * dst.width && src.height == 2 * dst.height &&
      (ch == 1 || ch == 2 || ch == 4) && aligned(src, 8) && aligned(dst, 4)) {
    const dim3 block(32, 8), grid = grid2d((dst.width * ch + 3) / 4, dst.height, block);
    if (ch == 1) half2x2_kernel<1><<<grid, block, 0, stream>>>(dev(src), dev(dst));
    if (ch == 2) half2x2_kernel<2><<<grid, block, 0, stream>>>(dev(src), dev(dst));
    if (ch == 4) half2x2_kernel<4><<<grid, block, 0, stream>>>(dev(src), dev(dst));
    return;
  }
  if (interp == ref::Interp::kArea && sx >= 1 && sy >= 1) {
    if (src.width % dst.width || src.height % dst.height) {  // fractional footprints
      const dim3 block(32, 8);
      resize_area_kernel<<<grid2d(dst.width, dst.height, block), block, 0, stream>>>(dev(src), dev(dst), sx, sy);
      return;
    }
    mode = ResizeMode::kAreaInt;
  }
  switch (src.channels) {
    case 1: launch_resize4<1>(src, dst, mode, sx, sy, stream); break;
    case 2: launch_resize4<2>(src, dst, mode, sx, sy, stream); break;
    case 3: launch_resize4<3>(src, dst, mode, sx, sy, stream); break;
    default: launch_resize4<4>(src, dst, mode, sx, sy, stream); break;
  }
}

void flip_plane(const PlaneView& src, const PlaneView& dst, bool horizontal, bool vertical,
                cudaStream_t stream) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "flip: planes differ in size");
  VPIPE_EXPECTS(src.data != dst.data, "flip: not in place");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::flip_plane", stream);
  const dim3 block(32, 8);
  const int ch = src.channels;
  if ((ch == 1 || ch == 2 || ch == 4) && src.row_bytes() % 16 == 0 && aligned(src, 16) && aligned(dst, 16)) {
    const dim3 grid = grid2d(static_cast<int>(src.row_bytes() / 16), dst.height, block);
    if (ch == 1) flip16_kernel<1><<<grid, block, 0, stream>>>(dev(src), dev(dst), horizontal, vertical);
    if (ch == 2) flip16_kernel<2><<<grid, block, 0, stream>>>(dev(src), dev(dst), horizontal, vertical);
    if (ch == 4) flip16_kernel<4><<<grid, block, 0, stream>>>(dev(src), dev(dst), horizontal, vertical);
    return;
  }
  flip_kernel<<<grid2d(dst.width, dst.height, block), block, 0, stream>>>(dev(src), dev(dst),
                                                                          horizontal, vertical);
}

void crop_plane(const PlaneView& src, const PlaneView& dst, int x, int y, cudaStream_t stream) {
  VPIPE_EXPECTS(src.channels == dst.channels && x >= 0 && y >= 0 && x + dst.width <= src.width &&
                    y + dst.height <= src.height,
                "crop: rectangle outside the source");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::crop_plane", stream);
  VPIPE_CUDA_TRY(cudaMemcpy2DAsync(dst.data, dst.pitch, src.row(y) + x * src.channels, src.pitch,
                                   dst.row_bytes(), static_cast<std::size_t>(dst.height),
                                   cudaMemcpyDeviceToDevice, stream));
}

namespace {
// Both passes of a separable filter, the float intermediate from `scratch`.
void run_separable(const char* name, const PlaneView& src, const PlaneView& dst,
                   const GaussKernel& k, float amount, DeviceMemoryResource& scratch,
                   cudaStream_t stream) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "separable filter: planes differ in size");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope(name, stream);
  if (tile_blur(src, dst, k, amount, stream)) return;
  // Larger radii, or in place: two passes through a float intermediate.
  const std::size_t tmp_bytes = src.row_bytes() * static_cast<std::size_t>(src.height) * sizeof(float);
  auto* tmp = static_cast<float*>(scratch.allocate(tmp_bytes, stream));
  launch_blur(src, dst, tmp, k, amount, stream);
  scratch.deallocate(tmp, tmp_bytes, stream);
}
}  // namespace

void gaussian_blur_plane(const PlaneView& src, const PlaneView& dst, double sigma,
                         DeviceMemoryResource& scratch, cudaStream_t stream) {
  VPIPE_EXPECTS(sigma > 0, "blur: sigma must be > 0");
  run_separable("vpipe::gaussian_blur_plane", src, dst, gaussian_weights(sigma), 0.f, scratch, stream);
}

void box_blur_plane(const PlaneView& src, const PlaneView& dst, int radius,
                    DeviceMemoryResource& scratch, cudaStream_t stream) {
  VPIPE_EXPECTS(radius >= 1 && radius <= kMaxRadius, "box blur: radius 1..192");
  GaussKernel k{};
  k.radius = radius;
  for (int i = 0; i <= 2 * radius; ++i) k.w[i] = 1.f / static_cast<float>(2 * radius + 1);
  run_separable("vpipe::box_blur_plane", src, dst, k, 0.f, scratch, stream);
}

void unsharp_plane(const PlaneView& src, const PlaneView& dst, double sigma, double amount,
                   DeviceMemoryResource& scratch, cudaStream_t stream) {
  VPIPE_EXPECTS(sigma > 0, "unsharp: sigma must be > 0");
  VPIPE_EXPECTS(src.data != dst.data, "unsharp: not in place");
  // amount 0 would read as "plain blur" below: the identity is a copy.
  if (amount == 0) {
    crop_plane(src, dst, 0, 0, stream);
    return;
  }
  run_separable("vpipe::unsharp_plane", src, dst, gaussian_weights(sigma), static_cast<float>(amount),
                scratch, stream);
}

void sobel_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "sobel: planes of one size");
  VPIPE_EXPECTS(src.data != dst.data, "sobel: not in place");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::sobel_plane", stream);
  const dim3 block(32, 8), grid = grid2d((dst.width * dst.channels + 3) / 4, dst.height, block);
  switch (src.channels) {
    case 1: sobel4_kernel<1><<<grid, block, 0, stream>>>(dev(src), dev(dst)); break;
    case 2: sobel4_kernel<2><<<grid, block, 0, stream>>>(dev(src), dev(dst)); break;
    case 3: sobel4_kernel<3><<<grid, block, 0, stream>>>(dev(src), dev(dst)); break;
    case 4: sobel4_kernel<4><<<grid, block, 0, stream>>>(dev(src), dev(dst)); break;
    default: VPIPE_EXPECTS(src.channels <= 4, "sobel: 1 to 4 channels");
  }
}

void pad_plane(const PlaneView& src, const PlaneView& dst, int x, int y, std::uint8_t fill,
               cudaStream_t stream) {
  detail::expect_pad(src, dst, x, y);
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::pad_plane", stream);
  if (aligned(dst, 16)) {  // each destination byte written once, 16 at a time
    const dim3 block(32, 8);
    pad16_kernel<<<grid2d(static_cast<int>((dst.row_bytes() + 15) / 16), dst.height, block), block, 0, stream>>>(
        dev(src), dev(dst), x, y, fill);
    return;
  }
  VPIPE_CUDA_TRY(cudaMemset2DAsync(dst.data, dst.pitch, fill, dst.row_bytes(),
                                   static_cast<std::size_t>(dst.height), stream));
  if (src.width && src.height)
    VPIPE_CUDA_TRY(cudaMemcpy2DAsync(dst.row(y) + x * dst.channels, dst.pitch, src.data, src.pitch,
                                     src.row_bytes(), static_cast<std::size_t>(src.height),
                                     cudaMemcpyDeviceToDevice, stream));
}

void overlay_rgba(const PlaneView& base, const PlaneView& overlay, const PlaneView& dst, int x,
                  int y, float opacity, cudaStream_t stream) {
  detail::expect_overlay(base, overlay, dst);
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::overlay_rgba", stream);
  const dim3 block(32, 8);
  if (base.channels == 4 && base.width % 4 == 0 && aligned(base, 16) && aligned(dst, 16)) {
    overlay4_kernel<<<grid2d(dst.width / 4, dst.height, block), block, 0, stream>>>(
        dev(base), dev(overlay), dev(dst), x, y, opacity);
    return;
  }
  overlay_kernel<<<grid2d(dst.width, dst.height, block), block, 0, stream>>>(
      dev(base), dev(overlay), dev(dst), x, y, opacity);
}

void p010_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_p010(y, uv, rgb);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::p010_to_rgb", stream);
  const bool vec = aligned(y, 16) && aligned(uv, 16) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(P010ToRgb<4>{dev(y), dev(uv), dev(rgb), color_coefs(spec), vec}, y.width, y.height, stream);
  else
    launch_group8(P010ToRgb<3>{dev(y), dev(uv), dev(rgb), color_coefs(spec), vec}, y.width, y.height, stream);
}

void invert_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream) {
  LaunchScope scope("vpipe::invert_plane", stream);
  launch_pointwise(src, dst, InvertOp{}, stream);
}

void lut_plane(const PlaneView& src, const PlaneView& dst, const std::uint8_t (&lut)[256],
               cudaStream_t stream) {
  LaunchScope scope("vpipe::lut_plane", stream);
  LutOp op{};
  for (int i = 0; i < 256; ++i) op.lut[i] = lut[i];
  launch_pointwise(src, dst, op, stream);
}

namespace {
__global__ void interleave_uv_kernel(Plane u, Plane v, Plane uv) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= uv.width || y >= uv.height) return;
  std::uint8_t* d = uv.row(y) + 2 * x;
  d[0] = u.row(y)[x];
  d[1] = v.row(y)[x];
}
}  // namespace

void interleave_uv(const PlaneView& u, const PlaneView& v, const PlaneView& uv, cudaStream_t stream) {
  VPIPE_EXPECTS(u.width == uv.width && v.width == uv.width && u.height == uv.height && v.height == uv.height &&
                    uv.channels == 2 && u.channels == 1 && v.channels == 1,
                "interleave_uv: U and V planes of the UV plane's size");
  if (uv.width == 0 || uv.height == 0) return;
  LaunchScope scope("vpipe::interleave_uv", stream);
  const dim3 block(32, 8);
  interleave_uv_kernel<<<grid2d(uv.width, uv.height, block), block, 0, stream>>>(dev(u), dev(v), dev(uv));
  VPIPE_CUDA_TRY(cudaGetLastError());
}

void fill_plane(const PlaneView& dst, std::uint8_t value, cudaStream_t stream) {
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::fill_plane", stream);
  VPIPE_CUDA_TRY(cudaMemset2DAsync(dst.data, dst.pitch, value, dst.row_bytes(),
                                   static_cast<std::size_t>(dst.height), stream));
}

void nv12_resize_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb,
                        ColorSpec spec, ref::Interp interp, cudaStream_t stream) {
  detail::expect_nv12_to_any_rgb(y, uv, rgb);
  if (rgb.width == 0 || rgb.height == 0) return;
  LaunchScope scope("vpipe::nv12_resize_to_rgb", stream);
  const dim3 block(32, 8);
  // Exact halves, bilinear or area: the luma sample is a 2×2 mean either way
  // and the chroma plane is the output's size.
  if (interp != ref::Interp::kNearest && y.width == 2 * rgb.width && y.height == 2 * rgb.height &&
      aligned(y, 8) && aligned(uv, 8) && aligned(rgb, rgb.channels == 4 ? 16 : 4)) {
    const dim3 grid = grid2d((rgb.width + 3) / 4, rgb.height, block);
    if (rgb.channels == 4)
      nv12_half_rgb_kernel<4><<<grid, block, 0, stream>>>(dev(y), dev(uv), dev(rgb), color_coefs(spec));
    else
      nv12_half_rgb_kernel<3><<<grid, block, 0, stream>>>(dev(y), dev(uv), dev(rgb), color_coefs(spec));
    return;
  }
  auto scale = [&](const PlaneView& p) {
    return Scale{static_cast<float>(p.width) / rgb.width, static_cast<float>(p.height) / rgb.height,
                 static_cast<double>(p.width) / rgb.width, static_cast<double>(p.height) / rgb.height};
  };
  const Scale ys = scale(y), cs = scale(uv);
  const dim3 grid = grid2d(rgb.width, rgb.height, block);
  const auto args = std::make_tuple(dev(y), dev(uv), dev(rgb), color_coefs(spec), ys, cs);
  auto launch = [&](auto kernel) {
    std::apply([&](auto... a) { kernel<<<grid, block, 0, stream>>>(a...); }, args);
  };
  const bool y_area = interp == ref::Interp::kArea && ys.dx >= 1 && ys.dy >= 1;
  const bool c_area = interp == ref::Interp::kArea && cs.dx >= 1 && cs.dy >= 1;
  if (interp == ref::Interp::kNearest)
    launch(nv12_resize_rgb_kernel<Sample::kNearest, Sample::kNearest>);
  else if (y_area && c_area)
    launch(nv12_resize_rgb_kernel<Sample::kArea, Sample::kArea>);
  else if (y_area)
    launch(nv12_resize_rgb_kernel<Sample::kArea, Sample::kBilinear>);
  else if (c_area)
    launch(nv12_resize_rgb_kernel<Sample::kBilinear, Sample::kArea>);
  else
    launch(nv12_resize_rgb_kernel<Sample::kBilinear, Sample::kBilinear>);
}

}  // namespace vpipe::cuda
