// Private to the CUDA kernels: launch scope, the device view of a plane and the
// conversion and packing helpers every kernel family shares.
#pragma once
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>

#include "contracts.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/memory/device_resource.hpp"

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
inline Plane dev(const PlaneView& p) {
  return {p.data,   p.width,
          p.height, p.channels,
          p.pitch,  reinterpret_cast<std::uintptr_t>(p.data) % 4 == 0 && p.pitch % 4 == 0};
}

inline dim3 grid2d(int w, int h, dim3 block) {
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

// byte-at-a-time version ran at 37–54 % of the copy peak at 4K (RESULTS).

// Byte i of w as a float without a conversion instruction: 2^23 + byte, minus 2^23.
__device__ __forceinline__ float byte_f(std::uint32_t w, int i) {
  return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7650 + i)) - 8388608.f;
}
__device__ __forceinline__ std::uint32_t pack4(std::uint32_t a, std::uint32_t b, std::uint32_t c,
                                               std::uint32_t d) {
  return a | b << 8 | c << 16 | d << 24;
}
inline bool aligned(const PlaneView& p, std::size_t n) {
  return reinterpret_cast<std::uintptr_t>(p.data) % n == 0 && p.pitch % n == 0;
}

// kN (4 or 8) consecutive RGB(A) pixels from registers, packed into words:
// RGBA as 16-byte stores; RGB (3·kN bytes) as 8-byte stores for 8 pixels,
// 4-byte ones for 4.
template <int kCh, int kN>
__device__ __forceinline__ void store_rgb_px(std::uint8_t* p, const float (&r)[kN],
                                             const float (&g)[kN], const float (&b)[kN]) {
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
      reinterpret_cast<uint4*>(p)[q] =
          make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
  } else if constexpr (kN == 8) {
#pragma unroll
    for (int q = 0; q < kWords / 2; ++q)
      reinterpret_cast<uint2*>(p)[q] = make_uint2(w[2 * q], w[2 * q + 1]);
  } else {
#pragma unroll
    for (int q = 0; q < kWords; ++q) reinterpret_cast<std::uint32_t*>(p)[q] = w[q];
  }
}
template <int kCh>
__device__ __forceinline__ void load_rgb8(const std::uint8_t* p, float (&r)[8], float (&g)[8],
                                          float (&b)[8]) {
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

// floor(f) as an int and f − floor(f), for |f| < 2^22, without the
// conversion unit: 1.5·2^23 + f rounded down is 1.5·2^23 + floor(f), whose
// bit pattern counts up by one per integer.
__device__ __forceinline__ void floor_split(float f, int& i, float& frac) {
  const float r = __fadd_rd(f, 12582912.f);
  i = __float_as_int(r) - 0x4B400000;
  frac = f - (r - 12582912.f);
}

// One axis of an area sample (OpenCV's INTER_AREA when shrinking): output pixel i covers
// [i·s, min((i+1)·s, n)) of a source n pixels long, s source pixels per output pixel; pixels
// first..last overlap it, each weighted by its overlap. In float: the footprint's ends differ
// from the reference's doubles by ~1e-4 of a pixel at 4K, a weight change far below an LSB.
// (The double version ran at 5 % of the copy peak at 4K, bound by FP64 conversions: ncu.)
struct AreaSpan {
  float f0, f1;
  int first, last;
  // shift: the footprint moved by that many pixels (a chroma plane's siting), inside 0..n.
  __device__ AreaSpan(int i, float s, int n, float shift = 0.f) {
    f0 = fmaxf(static_cast<float>(i) * s + shift, 0.f);
    f1 = fminf(static_cast<float>(i + 1) * s + shift, static_cast<float>(n));
    float frac;
    floor_split(f0, first, frac);
    floor_split(f1, last, frac);
    if (frac == 0.f) --last;  // f1 on a pixel edge: that pixel is outside
  }
  __device__ float weight(int k) const {
    return fminf(static_cast<float>(k) + 1.f, f1) - fmaxf(static_cast<float>(k), f0);
  }
};

// The area mean of channel ch of plane p over the footprint ax × ay.
__device__ __forceinline__ float area_mean(const Plane& p, const AreaSpan& ax, const AreaSpan& ay,
                                           int ch) {
  float acc = 0;
  for (int ys = ay.first; ys <= ay.last; ++ys) {
    const std::uint8_t* row = p.row(ys);
    float racc = 0;
    for (int xs = ax.first; xs <= ax.last; ++xs)
      racc += ax.weight(xs) * exact_f(row[xs * p.channels + ch]);
    acc += ay.weight(ys) * racc;
  }
  return acc * __frcp_rn((ax.f1 - ax.f0) * (ay.f1 - ay.f0));
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
    return (1 - ay) *
               ((1 - ax) * exact_f(ra[xa * channels + k]) + ax * exact_f(ra[xb * channels + k])) +
           ay * ((1 - ax) * exact_f(rb[xa * channels + k]) + ax * exact_f(rb[xb * channels + k]));
  }
};

}  // namespace
}  // namespace vpipe::cuda
