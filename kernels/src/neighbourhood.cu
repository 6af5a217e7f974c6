// CUDA neighbourhood filters: Gaussian and box blur, unsharp mask, Sobel (see cuda_ops.hpp for the
// contracts).
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

template <int R, int CH>
void launch_tile_blur(const PlaneView& src, const PlaneView& dst, const GaussKernel& k,
                      float amount, cudaStream_t stream) {
  using namespace blur_tile;
  const dim3 grid((static_cast<unsigned>(src.width) * CH + kTW - 1) / kTW,
                  (static_cast<unsigned>(src.height) + kTH - 1) / kTH);
  blur_tile_kernel<R, CH><<<grid, kThreads, 0, stream>>>(dev(src), dev(dst), k, amount);
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
    *reinterpret_cast<std::uint32_t*>(out) =
        v[0] | v[1] << 8 | v[2] << 16 | static_cast<std::uint32_t>(v[3]) << 24;
  } else {
    for (int j = 0; j < 4 && e0 + j < row_elems; ++j) out[j] = v[j];
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
  const dim3 block(32, 8), grid = grid2d((dst.width * dst.channels + 3) / 4, dst.height, block);
  switch (src.channels) {
    case 1:
      sobel4_kernel<1><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    case 2:
      sobel4_kernel<2><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    case 3:
      sobel4_kernel<3><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    case 4:
      sobel4_kernel<4><<<grid, block, 0, stream>>>(dev(src), dev(dst));
      break;
    default:
      VPIPE_EXPECTS(src.channels <= 4, "sobel: 1 to 4 channels");
  }
}

}  // namespace vpipe::cuda
