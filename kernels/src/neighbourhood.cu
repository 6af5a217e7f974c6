// CUDA neighbourhood filters: Gaussian and box blur, unsharp mask, Sobel (see cuda_ops.hpp for the
// contracts).
#include <cuda_fp16.h>

#include <cstring>

#include "kernel_common.cuh"

namespace vpipe::cuda {

namespace {

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
    const float v =
        tmp[static_cast<std::size_t>(interior ? ys : reflect101(ys, d.height)) * row_elems + xb];
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
  const std::size_t smem =
      static_cast<std::size_t>(kHRows) * (kHTile + 2 * k.radius) * src.channels;
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

// Over 80 lines: three phases (stage, horizontal, vertical) over one shared tile and its
// compile-time geometry, each needing the others' indexing.
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
            s.row(reflect101(y0 - R + i / kWordsPerRow, s.height)) + x0 - kHL +
            4 * (i % kWordsPerRow));
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

// ---- blur, one pass, half precision ----------------------------------------------
// The plain blur and box blur (no unsharp amount) for radii ≤ kMaxFixedRadius:
// the tile kernel's plan with packed 16-bit floats, two values per
// instruction (HFMA2): half the arithmetic of the float kernel, which ncu
// found bound by instruction issue. Values are centred (byte − 128), so no sum
// exceeds 128 in magnitude and fp16 rounds by at most 1/32 per operation:
// scripts/blur-half-sim replays these exact operations in numpy for σ 0.3–2.67
// and box radii 1–8 and finds every result within one LSB of the reference
// (what the tests allow; docs/results/blur-half-sim-*). The staged tile pairs rows (rows 2i and
// 2i+1 in one half2) for the horizontal taps; the horizontal results pair columns for the vertical
// taps. The unsharp mask stays in float: its amount scales the blur's error.
namespace blur_h2 {
// 64-row tiles, 4 rows a thread. 32-row tiles (2 rows a thread, three waves at 4K instead of
// one and a half) measured slower (docs/results/kernels-h200-2026-12-02-f68cc10).
constexpr int kTW = 128, kTH = 64, kThreads = 256, kK = 8, kS = 4;
constexpr std::uint32_t k1152 = 0x64806480u;  // half2(1152, 1152): 1024 + the centring 128
}  // namespace blur_h2
struct HalfWeights {
  __half2 w[2 * kMaxFixedRadius + 1];
};

__device__ __forceinline__ __half2 as_h2(std::uint32_t u) {
  __half2 h;
  memcpy(&h, &u, 4);
  return h;
}
__device__ __forceinline__ std::uint32_t h2_bits(__half2 h) {
  std::uint32_t u;
  memcpy(&u, &h, 4);
  return u;
}
// Byte k of a and byte k of b, centred, as one half2 (a in the low half): 1024 + byte is the
// bit pattern 0x64nn, exact, then 1152 off.
__device__ __forceinline__ __half2 centred_pair(std::uint32_t ab, int k) {
  // ab holds a0 b0 a1 b1 (or a2 b2 a3 b3): bytes 2k, 2k+1 of it
  const std::uint32_t bits = __byte_perm(ab, 0x64646464u, k == 0 ? 0x4140 : 0x4342);
  return __hsub2(as_h2(bits), as_h2(blur_h2::k1152));
}

// Over 80 lines: the float kernel's three phases, over one shared tile and its geometry.
template <int R, int CH>
__global__ void __launch_bounds__(blur_h2::kThreads)
    blur_h2_kernel(Plane s, Plane d, const __grid_constant__ HalfWeights k) {
  using namespace blur_h2;
  constexpr int kHalo = R * CH, kHL = (kHalo + 3) & ~3, kWT = kHL + kTW + kHL;
  constexpr int kRP = ((kTH + 2 * R + 3) / 4) * 2;  // row pairs staged, even (two per warp)
  constexpr int kOff = kHL - kHalo, kWin = kOff + kK + 2 * kHalo, kNV = (kWin + 3) / 4;
  static_assert(kThreads == (kTW / 8) * (kTH / kS), "one vertical strip per thread");
  static_assert(kTW / kK == 16, "a warp's horizontal tasks: two row pairs of 16");
  // Word (half2) pitches: the staged tile ≡ 4 mod 32, as the float kernel's (an 8-lane phase of
  // 16-byte loads: 4 tasks of one row pair, 4 of the next, in different bank groups); the
  // horizontal results ≡ 8 mod 32: a task writes rows 2i and 2i+1, and the next pair's task
  // in the same phase starts 2 rows (16 words ≡ half the banks) further round.
  constexpr int kWP = kWT + ((36 - kWT % 32) % 32), kHP = kTW / 2 + 8;
  static_assert(kWP % 32 == 4 && kHP % 32 == 8, "conflict-free pitches");
  constexpr int kWords = kRP * kWP > 2 * kRP * kHP ? kRP * kWP : 2 * kRP * kHP;
  __shared__ __align__(16) std::uint32_t tile[kWords + 4];  // +4: the last window's overrun
  const int tid = static_cast<int>(threadIdx.x);
  const int row_elems = s.width * CH;
  const int x0 = static_cast<int>(blockIdx.x) * kTW, y0 = static_cast<int>(blockIdx.y) * kTH;

  // 1. Stage row pairs (y0-R+2i, y0-R+2i+1), elements x0-kHL .. x0+kTW+kHL, centred.
  constexpr int kWordsPerRow = kWT / 4, kTasks0 = kRP * kWordsPerRow;
  if (s.aligned4 && x0 - kHL >= 0 && x0 + kTW + kHL <= row_elems) {
    constexpr int kLoads = (kTasks0 + kThreads - 1) / kThreads;
    std::uint32_t a[kLoads], b[kLoads];
#pragma unroll
    for (int n = 0; n < kLoads; ++n) {
      const int i = tid + n * kThreads;
      if (i >= kTasks0) continue;
      const int ya = y0 - R + 2 * (i / kWordsPerRow), e = x0 - kHL + 4 * (i % kWordsPerRow);
      a[n] = *reinterpret_cast<const std::uint32_t*>(s.row(reflect101(ya, s.height)) + e);
      b[n] = *reinterpret_cast<const std::uint32_t*>(s.row(reflect101(ya + 1, s.height)) + e);
    }
#pragma unroll
    for (int n = 0; n < kLoads; ++n) {
      const int i = tid + n * kThreads;
      if (i >= kTasks0) continue;
      const std::uint32_t lo = __byte_perm(a[n], b[n], 0x5140),
                          hi = __byte_perm(a[n], b[n], 0x7362);
      *reinterpret_cast<uint4*>(&tile[i / kWordsPerRow * kWP + 4 * (i % kWordsPerRow)]) =
          make_uint4(h2_bits(centred_pair(lo, 0)), h2_bits(centred_pair(lo, 1)),
                     h2_bits(centred_pair(hi, 0)), h2_bits(centred_pair(hi, 1)));
    }
  } else {  // blocks at the left and right edges: reflected element by element
    for (int i = tid; i < kTasks0; i += kThreads) {
      const int rp = i / kWordsPerRow, w = i % kWordsPerRow;
      const std::uint8_t* ra = s.row(reflect101(y0 - R + 2 * rp, s.height));
      const std::uint8_t* rb = s.row(reflect101(y0 - R + 2 * rp + 1, s.height));
      std::uint32_t t[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int e = x0 - kHL + 4 * w + q + 64 * CH;  // shifted ≥ 0 (kHL ≤ 32)
        const int at = reflect101(e / CH - 64, s.width) * CH + e % CH;
        t[q] = h2_bits(__floats2half2_rn(ra[at] - 128.f, rb[at] - 128.f));
      }
      *reinterpret_cast<uint4*>(&tile[rp * kWP + 4 * w]) = make_uint4(t[0], t[1], t[2], t[3]);
    }
  }
  __syncthreads();

  // 2. Horizontal taps, two rows at once: kK outputs per task from a register window; the
  // task layout is the float kernel's (row pairs for rows).
  constexpr int kTasks = kRP * (kTW / kK), kPer = (kTasks + kThreads - 1) / kThreads;
  auto task = [](int t, int& rp, int& e0) {
    const int l = t % 32;
    rp = 2 * (t / 32) + (l % 8) / 4;
    e0 = kK * (4 * (l / 8) + l % 4);
  };
  std::uint32_t h[kPer][kK];
#pragma unroll
  for (int n = 0; n < kPer; ++n) {
    const int t = tid + n * kThreads;
    if (t >= kTasks) break;
    int rp, e0;
    task(t, rp, e0);
    std::uint32_t win[4 * kNV];
#pragma unroll
    for (int q = 0; q < kNV; ++q) {
      const uint4 v = *reinterpret_cast<const uint4*>(&tile[rp * kWP + e0 + 4 * q]);
      win[4 * q] = v.x, win[4 * q + 1] = v.y, win[4 * q + 2] = v.z, win[4 * q + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      __half2 acc = __float2half2_rn(0.f);
#pragma unroll
      for (int i = 0; i <= 2 * R; ++i) acc = __hfma2(k.w[i], as_h2(win[kOff + j + i * CH]), acc);
      h[n][j] = h2_bits(acc);
    }
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < kPer; ++n) {  // column pairs of rows 2rp and 2rp+1, over the staged tile
    const int t = tid + n * kThreads;
    if (t >= kTasks) break;
    int rp, e0;
    task(t, rp, e0);
    std::uint32_t ra[kK / 2], rb[kK / 2];
#pragma unroll
    for (int m = 0; m < kK / 2; ++m) {
      ra[m] = __byte_perm(h[n][2 * m], h[n][2 * m + 1], 0x5410);
      rb[m] = __byte_perm(h[n][2 * m], h[n][2 * m + 1], 0x7632);
    }
    *reinterpret_cast<uint4*>(&tile[2 * rp * kHP + e0 / 2]) =
        make_uint4(ra[0], ra[1], ra[2], ra[3]);
    *reinterpret_cast<uint4*>(&tile[(2 * rp + 1) * kHP + e0 / 2]) =
        make_uint4(rb[0], rb[1], rb[2], rb[3]);
  }
  __syncthreads();

  // 3. Vertical taps: 8 elements (4 column pairs) × kS rows per thread, 8 bytes per store.
  const int cg = tid % (kTW / 8), s0 = (tid / (kTW / 8)) * kS;
  __half2 acc[kS][4];
#pragma unroll
  for (int j = 0; j < kS; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q) acc[j][q] = __float2half2_rn(0.f);
#pragma unroll
  for (int t = 0; t < kS + 2 * R; ++t) {
    const uint4 v = *reinterpret_cast<const uint4*>(&tile[(s0 + t) * kHP + 4 * cg]);
    const __half2 c[4] = {as_h2(v.x), as_h2(v.y), as_h2(v.z), as_h2(v.w)};
#pragma unroll
    for (int j = 0; j < kS; ++j) {
      if (t - j < 0 || t - j > 2 * R) continue;
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[j][q] = __hfma2(k.w[t - j], c[q], acc[j][q]);
    }
  }
  const int ex = x0 + 8 * cg;
  if (ex >= row_elems) return;
  const __half2 lo = as_h2(0x64006400u), hi = as_h2(0x64FF64FFu);  // 1024 + 0, 1024 + 255
#pragma unroll
  for (int j = 0; j < kS; ++j) {
    const int y = y0 + s0 + j;
    if (y >= d.height) break;
    std::uint32_t u[4];  // 1024 + the byte, rounded to nearest by the add
#pragma unroll
    for (int q = 0; q < 4; ++q)
      u[q] = h2_bits(__hmin2(__hmax2(__hadd2(acc[j][q], as_h2(k1152)), lo), hi));
    const std::uint32_t w0 = __byte_perm(u[0], u[1], 0x6420), w1 = __byte_perm(u[2], u[3], 0x6420);
    std::uint8_t* out = d.row(y) + ex;
    if (ex + 8 <= row_elems && reinterpret_cast<std::uintptr_t>(out) % 8 == 0) {
      *reinterpret_cast<uint2*>(out) = make_uint2(w0, w1);
    } else {
      for (int b = 0; b < 8 && ex + b < row_elems; ++b)
        out[b] = static_cast<std::uint8_t>((b < 4 ? w0 : w1) >> (8 * (b % 4)));
    }
  }
}

template <int R, int CH>
void launch_tile_blur(const PlaneView& src, const PlaneView& dst, const GaussKernel& k,
                      float amount, cudaStream_t stream) {
  const auto cols = static_cast<unsigned>(src.width) * CH;
  const auto rows = static_cast<unsigned>(src.height);
  if (amount == 0.f) {  // a plain blur: half precision (see blur_h2_kernel)
    using namespace blur_h2;
    HalfWeights h{};
    for (int i = 0; i <= 2 * R; ++i) h.w[i] = __floats2half2_rn(k.w[i], k.w[i]);
    blur_h2_kernel<R, CH>
        <<<dim3((cols + kTW - 1) / kTW, (rows + kTH - 1) / kTH), kThreads, 0, stream>>>(
            dev(src), dev(dst), h);
    return;
  }
  using namespace blur_tile;
  blur_tile_kernel<R, CH>
      <<<dim3((cols + kTW - 1) / kTW, (rows + kTH - 1) / kTH), kThreads, 0, stream>>>(
          dev(src), dev(dst), k, amount);
}

template <int CH, int... R>
bool dispatch_tile_blur_r(std::integer_sequence<int, R...>, const PlaneView& src,
                          const PlaneView& dst, const GaussKernel& k, float amount,
                          cudaStream_t stream) {
  return ((k.radius == R + 1 ? (launch_tile_blur<R + 1, CH>(src, dst, k, amount, stream), true)
                             : false) ||
          ...);
}

// false: not a case for the one-pass kernel (radius, channels, or src and dst overlap).
bool tile_blur(const PlaneView& src, const PlaneView& dst, const GaussKernel& k, float amount,
               cudaStream_t stream) {
  const auto* s0 = src.data;
  const auto* s1 =
      src.data + src.pitch * static_cast<std::size_t>(src.height - 1) + src.row_bytes();
  const auto* d0 = dst.data;
  const auto* d1 =
      dst.data + dst.pitch * static_cast<std::size_t>(dst.height - 1) + dst.row_bytes();
  if (k.radius < 1 || k.radius > kMaxFixedRadius || (s0 < d1 && d0 < s1)) return false;
  const auto radii = std::make_integer_sequence<int, kMaxFixedRadius>{};
  switch (src.channels) {
    case 1:
      return dispatch_tile_blur_r<1>(radii, src, dst, k, amount, stream);
    case 2:
      return dispatch_tile_blur_r<2>(radii, src, dst, k, amount, stream);
    case 3:
      return dispatch_tile_blur_r<3>(radii, src, dst, k, amount, stream);
    case 4:
      return dispatch_tile_blur_r<4>(radii, src, dst, k, amount, stream);
    default:
      return false;
  }
}

// sqrt(gx² + gy²) rounded to a byte, clamped at 255. sqrt.approx is within a few 2^-23 of the
// root; the root of an integer m is never within 4.9e-4 of k + 0.5 for k < 256 (m would be
// k² + k + 0.25), so it rounds as the exact root does. m ≥ 255.5² rounds to 255: clamped first.
__device__ __forceinline__ std::uint32_t sobel_magnitude(int gx, int gy) {
  const int m = min(gx * gx + gy * gy, 65280);
  float root;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(root) : "f"(exact_f(static_cast<std::uint32_t>(m))));
  return __float_as_uint(__fadd_rz(root + 0.5f, 8388608.f)) & 0xFFu;
}

// Sobel of element e (pixel e / c, channel e % c) of row y, reflect-101 borders.
__device__ __forceinline__ std::uint8_t sobel_at(const Plane& s, int e, int y) {
  const int c = s.channels, x = e / c, ch = e % c;
  const int xm = reflect101(x - 1, s.width) * c + ch, xp = reflect101(x + 1, s.width) * c + ch;
  const std::uint8_t* rm = s.row(reflect101(y - 1, s.height));
  const std::uint8_t* r0 = s.row(y);
  const std::uint8_t* rp = s.row(reflect101(y + 1, s.height));
  const int gx = (rm[xp] + 2 * r0[xp] + rp[xp]) - (rm[xm] + 2 * r0[xm] + rp[xm]);
  const int gy = (rp[xm] + 2 * rp[e] + rp[xp]) - (rm[xm] + 2 * rm[e] + rm[xp]);
  return static_cast<std::uint8_t>(sobel_magnitude(gx, gy));
}

// Four consecutive output bytes × kSobelRows rows per thread. The 3×3 Sobel is
// separable: each source row is read once per strip (three words: bytes
// e-4 .. e+7 hold both neighbours for 1–4 channels), all the strip's rows
// before any arithmetic (the loads in flight together: ncu found a strip
// that loaded row by row latency-bound), then reduced to its horizontal
// smooth (1 2 1) and difference (−1 0 1); three rows of those give gx and gy.
constexpr int kSobelRows = 4;

template <int kCh>
__global__ void sobel_strip_kernel(Plane s, Plane d) {
  const int e0 = 4 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y0 = kSobelRows * static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int row_elems = d.width * kCh;
  if (e0 >= row_elems || y0 >= d.height) return;
  const int rows = min(kSobelRows, d.height - y0);
  if (!(s.aligned4 && d.aligned4 && e0 >= 4 && e0 + 8 <= row_elems)) {  // the rows' ends
    for (int j = 0; j < rows; ++j)
      for (int b = 0; b < 4 && e0 + b < row_elems; ++b)
        d.row(y0 + j)[e0 + b] = sobel_at(s, e0 + b, y0 + j);
    return;
  }
  constexpr int kIn = kSobelRows + 2;
  std::uint32_t w[kIn][3];
#pragma unroll
  for (int t = 0; t < kIn; ++t) {  // rows y0-1 .. y0+kSobelRows (reflected at the edges)
    const auto* p = reinterpret_cast<const std::uint32_t*>(
        s.row(reflect101(min(y0 - 1 + t, d.height), s.height)) + e0 - 4);
    w[t][0] = p[0], w[t][1] = p[1], w[t][2] = p[2];
  }
  int sm[kIn][4], df[kIn][4];
#pragma unroll
  for (int t = 0; t < kIn; ++t)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      auto byte = [&](int i) { return static_cast<int>((w[t][i / 4] >> (8 * (i % 4))) & 0xFF); };
      const int m = byte(4 + j - kCh), o = byte(4 + j), q = byte(4 + j + kCh);
      sm[t][j] = m + 2 * o + q;
      df[t][j] = q - m;
    }
#pragma unroll
  for (int j = 0; j < kSobelRows; ++j) {
    if (j >= rows) break;
    std::uint32_t v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      v[k] = sobel_magnitude(df[j][k] + 2 * df[j + 1][k] + df[j + 2][k], sm[j + 2][k] - sm[j][k]);
    *reinterpret_cast<std::uint32_t*>(d.row(y0 + j) + e0) = pack4(v[0], v[1], v[2], v[3]);
  }
}

}  // namespace

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
  const std::size_t tmp_bytes =
      src.row_bytes() * static_cast<std::size_t>(src.height) * sizeof(float);
  auto* tmp = static_cast<float*>(scratch.allocate(tmp_bytes, stream));
  launch_blur(src, dst, tmp, k, amount, stream);
  scratch.deallocate(tmp, tmp_bytes, stream);
}
}  // namespace

void gaussian_blur_plane(const PlaneView& src, const PlaneView& dst, double sigma,
                         DeviceMemoryResource& scratch, cudaStream_t stream) {
  VPIPE_EXPECTS(sigma > 0, "blur: sigma must be > 0");
  run_separable("vpipe::gaussian_blur_plane", src, dst, gaussian_weights(sigma), 0.f, scratch,
                stream);
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
  run_separable("vpipe::unsharp_plane", src, dst, gaussian_weights(sigma),
                static_cast<float>(amount), scratch, stream);
}

void sobel_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream) {
  VPIPE_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                "sobel: planes of one size");
  VPIPE_EXPECTS(src.data != dst.data, "sobel: not in place");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::sobel_plane", stream);
  const dim3 block(32, 8), grid = grid2d((dst.width * dst.channels + 3) / 4,
                                         (dst.height + kSobelRows - 1) / kSobelRows, block);
  switch (src.channels) {
    case 1:
      sobel_strip_kernel<1><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    case 2:
      sobel_strip_kernel<2><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    case 3:
      sobel_strip_kernel<3><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    case 4:
      sobel_strip_kernel<4><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    default:
      VPIPE_EXPECTS(src.channels <= 4, "sobel: 1 to 4 channels");
  }
}

}  // namespace vpipe::cuda
