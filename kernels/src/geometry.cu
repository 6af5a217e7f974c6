// CUDA geometry: resize, flip, crop and pad (see cuda_ops.hpp for the contracts).
#include <type_traits>

#include "kernel_common.cuh"

namespace vpipe::cuda {

namespace {

enum class ResizeMode { kNearest, kBilinear, kAreaInt, kArea };

// Four consecutive output bytes (1–4 pixels, kCh channels) per thread, one
// 32-bit store where the row allows: per-thread set-up is shared and the
// stores are four times fewer than byte by byte.
template <int kCh, ResizeMode kMode>
__global__ void resize4_kernel(Plane s, Plane d, float sx, float sy, double dsx, double dsy, int kx,
                               int ky) {
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
    } else if constexpr (kMode == ResizeMode::kArea) {  // fractional footprints
      v[j] = to_u8(area_mean(s, AreaSpan(x, sx, s.width), AreaSpan(y, sy, s.height), c));
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
    *reinterpret_cast<std::uint32_t*>(out) =
        v[0] | v[1] << 8 | v[2] << 16 | static_cast<std::uint32_t>(v[3]) << 24;
  } else {
    for (int j = 0; j < 4 && e0 + j < row_elems; ++j) out[j] = v[j];
  }
}

// Exactly half size in both directions, bilinear or area: both are the mean
// of each 2×2 block, (a + b + c + d + 2) / 4 (the general kernels round the
// same sum the same way). kN output bytes per thread (4 or 8) from one 2·kN-byte
// load per source row; 1-, 2- and 4-byte pixels.
template <int kCh, int kN>
__device__ __forceinline__ void half2x2(const Plane& s, const Plane& d, int thread, int y) {
  using Load = std::conditional_t<kN == 8, uint4, uint2>;
  const int e0 = kN * thread;
  const int row_elems = d.width * kCh;
  if (e0 >= row_elems || y >= d.height) return;
  const std::uint8_t* r0 = s.row(2 * y);
  const std::uint8_t* r1 = s.row(2 * y + 1);
  std::uint8_t* out = d.row(y) + e0;
  auto mean = [](int a, int b, int c, int e) {
    return static_cast<std::uint32_t>((a + b + c + e + 2) >> 2);
  };
  if (e0 + kN <= row_elems) {  // source bytes 2*e0 .. 2*e0+2kN-1 of both rows
    const Load a = *reinterpret_cast<const Load*>(r0 + 2 * e0);
    const Load b = *reinterpret_cast<const Load*>(r1 + 2 * e0);
    const auto* wa = reinterpret_cast<const std::uint32_t*>(&a);
    const auto* wb = reinterpret_cast<const std::uint32_t*>(&b);
    auto byte = [](const std::uint32_t* w, int i) {
      return static_cast<int>((w[i / 4] >> (8 * (i % 4))) & 0xFF);
    };
    std::uint32_t v[kN / 4] = {};
#pragma unroll
    for (int j = 0; j < kN; ++j) {
      const int i = 2 * j - j % kCh;  // this byte's channel in the first pixel of its pair
      v[j / 4] |= mean(byte(wa, i), byte(wa, i + kCh), byte(wb, i), byte(wb, i + kCh))
                  << (8 * (j % 4));
    }
    if constexpr (kN == 8)
      *reinterpret_cast<uint2*>(out) = make_uint2(v[0], v[1]);
    else
      *reinterpret_cast<std::uint32_t*>(out) = v[0];
    return;
  }
  for (int j = 0; e0 + j < row_elems; ++j) {
    const int i = 2 * (e0 + j) - (e0 + j) % kCh;
    out[j] = static_cast<std::uint8_t>(mean(r0[i], r0[i + kCh], r1[i], r1[i + kCh]));
  }
}

// Up to four planes halved in one launch (NV12's Y and UV, I420's three):
// blockIdx.z picks the plane, and the blocks past a smaller plane's extent
// return at once. One launch where there were one per plane: at 4K a plane is
// a few microseconds of work, of the order of a launch's ramp and tail.
struct HalfPlanes {
  Plane s[4], d[4];
};
template <int kN>
__global__ void half2x2_planes_kernel(const __grid_constant__ HalfPlanes p) {
  const int z = static_cast<int>(blockIdx.z);
  const int thread = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  switch (p.d[z].channels) {
    case 1:
      return half2x2<1, kN>(p.s[z], p.d[z], thread, y);
    case 2:
      return half2x2<2, kN>(p.s[z], p.d[z], thread, y);
    default:
      return half2x2<4, kN>(p.s[z], p.d[z], thread, y);
  }
}

// Area resize to exactly 2/3 in both directions (1080p → 720p, 4K → 1440p): each output
// pixel's footprint is 1.5 × 1.5 source pixels, so along a row output pixels 2k and 2k+1
// take source pixels (3k, 3k+1) and (3k+1, 3k+2) with weights (2, 1) and (1, 2), and down the
// columns the same: every output is an integer sum of weight 9 over 2 × 2 sources, exact.
// The area mean rounded to nearest is (sum + 4) / 9 (a ninth is never a half: the float
// kernels' rounding gives the same byte). Each thread: two output rows of 8 bytes from three
// source rows of 12 bytes (1-, 2- and 4-byte pixels), three 4-byte loads per row.
template <int kCh>
__device__ __forceinline__ void third2(const Plane& s, const Plane& d, int thread, int pair) {
  const int e0 = 8 * thread, row_elems = d.width * kCh;
  if (e0 >= row_elems || 2 * pair >= d.height) return;
  const std::uint8_t* r[3] = {s.row(3 * pair), s.row(3 * pair + 1), s.row(3 * pair + 2)};
  std::uint8_t* out[2] = {d.row(2 * pair), d.row(2 * pair + 1)};
  // Output byte j of this thread's 8 (or of the row's tail): its channel's two source bytes
  // in the 12 (24 for the tail's general case) starting at source byte 12 * thread.
  auto src_of = [](int j, int& a, int& b) {
    const int x = j / kCh, c = j % kCh, k = x / 2, odd = x % 2;
    a = (3 * k + odd) * kCh + c;
    b = a + kCh;
  };
  auto mean9 = [](std::uint32_t sum) { return (sum + 4u) / 9u; };
  if (s.aligned4 && e0 + 8 <= row_elems) {
    std::uint32_t h[3][8];
#pragma unroll
    for (int q = 0; q < 3; ++q) {
      const auto* w = reinterpret_cast<const std::uint32_t*>(r[q] + 12 * thread);
      const std::uint32_t v[3] = {w[0], w[1], w[2]};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        int a, b;
        src_of(j, a, b);
        const std::uint32_t pa = (v[a / 4] >> (8 * (a % 4))) & 0xFFu;
        const std::uint32_t pb = (v[b / 4] >> (8 * (b % 4))) & 0xFFu;
        h[q][j] = (j / kCh) % 2 ? pa + 2 * pb : 2 * pa + pb;
      }
    }
    std::uint32_t o0[2] = {}, o1[2] = {};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o0[j / 4] |= mean9(2 * h[0][j] + h[1][j]) << (8 * (j % 4));
      o1[j / 4] |= mean9(h[1][j] + 2 * h[2][j]) << (8 * (j % 4));
    }
    if (d.aligned4) {
      *reinterpret_cast<std::uint32_t*>(out[0] + e0) = o0[0];
      *reinterpret_cast<std::uint32_t*>(out[0] + e0 + 4) = o0[1];
      *reinterpret_cast<std::uint32_t*>(out[1] + e0) = o1[0];
      *reinterpret_cast<std::uint32_t*>(out[1] + e0 + 4) = o1[1];
    } else {
      for (int j = 0; j < 8; ++j) {
        out[0][e0 + j] = static_cast<std::uint8_t>(o0[j / 4] >> (8 * (j % 4)));
        out[1][e0 + j] = static_cast<std::uint8_t>(o1[j / 4] >> (8 * (j % 4)));
      }
    }
    return;
  }
  for (int j = 0; e0 + j < row_elems && j < 8; ++j) {  // the row's tail, or unaligned rows
    int a, b;
    src_of(j, a, b);
    a += 12 * thread, b += 12 * thread;
    const bool odd = (j / kCh) % 2;
    std::uint32_t h[3];
    for (int q = 0; q < 3; ++q) h[q] = odd ? r[q][a] + 2u * r[q][b] : 2u * r[q][a] + r[q][b];
    out[0][e0 + j] = static_cast<std::uint8_t>(mean9(2 * h[0] + h[1]));
    out[1][e0 + j] = static_cast<std::uint8_t>(mean9(h[1] + 2 * h[2]));
  }
}

__global__ void third2_planes_kernel(const __grid_constant__ HalfPlanes p) {
  const int z = static_cast<int>(blockIdx.z);
  const int thread = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int pair = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  switch (p.d[z].channels) {
    case 1:
      return third2<1>(p.s[z], p.d[z], thread, pair);
    case 2:
      return third2<2>(p.s[z], p.d[z], thread, pair);
    default:
      return third2<4>(p.s[z], p.d[z], thread, pair);
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
    if (whole && o >= sx0 && o + 16 <= sx1 &&
        reinterpret_cast<std::uintptr_t>(in + (o - sx0)) % 16 == 0) {
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
void launch_resize4(const PlaneView& src, const PlaneView& dst, ResizeMode mode, double sx,
                    double sy, cudaStream_t stream) {
  const dim3 block(32, 8), grid = grid2d((dst.width * kCh + 3) / 4, dst.height, block);
  const auto fx = static_cast<float>(sx), fy = static_cast<float>(sy);
  const int kx = static_cast<int>(sx), ky = static_cast<int>(sy);
  if (mode == ResizeMode::kNearest)
    resize4_kernel<kCh, ResizeMode::kNearest>
        <<<grid, block, 0, stream>>>(dev(src), dev(dst), fx, fy, sx, sy, kx, ky);
  else if (mode == ResizeMode::kBilinear)
    resize4_kernel<kCh, ResizeMode::kBilinear>
        <<<grid, block, 0, stream>>>(dev(src), dev(dst), fx, fy, sx, sy, kx, ky);
  else if (mode == ResizeMode::kArea)
    resize4_kernel<kCh, ResizeMode::kArea>
        <<<grid, block, 0, stream>>>(dev(src), dev(dst), fx, fy, sx, sy, kx, ky);
  else
    resize4_kernel<kCh, ResizeMode::kAreaInt>
        <<<grid, block, 0, stream>>>(dev(src), dev(dst), fx, fy, sx, sy, kx, ky);
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
  for (int ch = 0; ch < d.channels; ++ch)
    d.row(y)[x * d.channels + ch] = s.row(ys)[xs * s.channels + ch];
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

// Each destination byte from the source byte at its clamped position.
__global__ void pad_edge_kernel(Plane s, Plane d) {
  const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int c = d.channels;
  if (e >= d.width * c || y >= d.height) return;
  const int x = min(e / c, s.width - 1);
  d.row(y)[e] = s.row(min(y, s.height - 1))[x * c + e % c];
}

bool halves_exactly(const PlaneView& src, const PlaneView& dst, ref::Interp interp) {
  const int ch = src.channels;
  return interp != ref::Interp::kNearest && src.channels == dst.channels &&
         src.width == 2 * dst.width && src.height == 2 * dst.height &&
         (ch == 1 || ch == 2 || ch == 4) && aligned(src, 8) && aligned(dst, 4) && dst.width > 0 &&
         dst.height > 0;
}

bool two_thirds_area(const PlaneView& src, const PlaneView& dst, ref::Interp interp) {
  const int ch = src.channels;
  return interp == ref::Interp::kArea && src.channels == dst.channels &&
         2 * src.width == 3 * dst.width && 2 * src.height == 3 * dst.height &&
         (ch == 1 || ch == 2 || ch == 4) && dst.width > 0 && dst.height > 0;
}

// Planes that all shrink to exactly 2/3 by area: one launch, a pair of output rows per thread row.
void launch_two_thirds(const PlaneView* src, const PlaneView* dst, int n, cudaStream_t stream) {
  HalfPlanes p{};
  int row_elems = 0, pairs = 0;
  for (int i = 0; i < n; ++i) {
    p.s[i] = dev(src[i]);
    p.d[i] = dev(dst[i]);
    row_elems = std::max(row_elems, static_cast<int>(dst[i].row_bytes()));
    pairs = std::max(pairs, dst[i].height / 2);
  }
  const dim3 block(32, 8);
  dim3 grid = grid2d((row_elems + 7) / 8, pairs, block);
  grid.z = static_cast<unsigned>(n);
  third2_planes_kernel<<<grid, block, 0, stream>>>(p);
}

// Planes that all halve exactly: one launch, 8 output bytes per thread where every plane's
// rows allow 16-byte loads and 8-byte stores, else 4.
void launch_halves(const PlaneView* src, const PlaneView* dst, int n, cudaStream_t stream) {
  HalfPlanes p{};
  bool wide = true;
  int row_elems = 0, rows = 0;
  for (int i = 0; i < n; ++i) {
    p.s[i] = dev(src[i]);
    p.d[i] = dev(dst[i]);
    wide &= aligned(src[i], 16) && aligned(dst[i], 8);
    row_elems = std::max(row_elems, static_cast<int>(dst[i].row_bytes()));
    rows = std::max(rows, dst[i].height);
  }
  const int per_thread = wide ? 8 : 4;
  const dim3 block(32, 8);
  dim3 grid = grid2d((row_elems + per_thread - 1) / per_thread, rows, block);
  grid.z = static_cast<unsigned>(n);
  if (wide)
    half2x2_planes_kernel<8><<<grid, block, 0, stream>>>(p);
  else
    half2x2_planes_kernel<4><<<grid, block, 0, stream>>>(p);
}
}  // namespace

void resize_planes(const PlaneView* src, const PlaneView* dst, int n, ref::Interp interp,
                   cudaStream_t stream) {
  VPIPE_EXPECTS(n >= 0 && n <= 4, "resize: up to four planes");
  bool all_halve = n > 0;
  bool all_thirds = n > 0;
  for (int i = 0; i < n; ++i) {
    all_halve &= halves_exactly(src[i], dst[i], interp);
    all_thirds &= two_thirds_area(src[i], dst[i], interp);
  }
  if (all_halve || all_thirds) {
    LaunchScope scope("vpipe::resize_planes", stream);
    (all_halve ? launch_halves : launch_two_thirds)(src, dst, n, stream);
    return;
  }
  for (int i = 0; i < n; ++i) resize_plane(src[i], dst[i], interp, stream);
}

void resize_plane(const PlaneView& src, const PlaneView& dst, ref::Interp interp,
                  cudaStream_t stream) {
  VPIPE_EXPECTS(src.channels == dst.channels && src.channels <= 4, "resize: channel counts differ");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::resize_plane", stream);
  const double sx = static_cast<double>(src.width) / dst.width;
  const double sy = static_cast<double>(src.height) / dst.height;
  ResizeMode mode = interp == ref::Interp::kNearest ? ResizeMode::kNearest : ResizeMode::kBilinear;
  if (halves_exactly(src, dst, interp)) {
    launch_halves(&src, &dst, 1, stream);
    return;
  }
  if (two_thirds_area(src, dst, interp)) {
    launch_two_thirds(&src, &dst, 1, stream);
    return;
  }
  if (interp == ref::Interp::kArea && sx >= 1 && sy >= 1)  // block means for whole ratios
    mode =
        src.width % dst.width || src.height % dst.height ? ResizeMode::kArea : ResizeMode::kAreaInt;
  switch (src.channels) {
    case 1:
      launch_resize4<1>(src, dst, mode, sx, sy, stream);
      break;
    case 2:
      launch_resize4<2>(src, dst, mode, sx, sy, stream);
      break;
    case 3:
      launch_resize4<3>(src, dst, mode, sx, sy, stream);
      break;
    default:
      launch_resize4<4>(src, dst, mode, sx, sy, stream);
      break;
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
  if ((ch == 1 || ch == 2 || ch == 4) && src.row_bytes() % 16 == 0 && aligned(src, 16) &&
      aligned(dst, 16)) {
    const dim3 grid = grid2d(static_cast<int>(src.row_bytes() / 16), dst.height, block);
    if (ch == 1)
      flip16_kernel<1><<<grid, block, 0, stream>>>(dev(src), dev(dst), horizontal, vertical);
    if (ch == 2)
      flip16_kernel<2><<<grid, block, 0, stream>>>(dev(src), dev(dst), horizontal, vertical);
    if (ch == 4)
      flip16_kernel<4><<<grid, block, 0, stream>>>(dev(src), dev(dst), horizontal, vertical);
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
  PlaneView rect = src;  // the rectangle, as a plane of the source's memory
  rect.data = src.row(y) + x * src.channels;
  rect.width = dst.width;
  rect.height = dst.height;
  copy_plane(rect, dst.data, dst.pitch, cudaMemcpyDeviceToDevice,
             stream);  // a kernel under capture
}

void pad_plane(const PlaneView& src, const PlaneView& dst, int x, int y, std::uint8_t fill,
               cudaStream_t stream) {
  detail::expect_pad(src, dst, x, y);
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::pad_plane", stream);
  if (aligned(dst, 16)) {  // each destination byte written once, 16 at a time
    const dim3 block(32, 8);
    pad16_kernel<<<grid2d(static_cast<int>((dst.row_bytes() + 15) / 16), dst.height, block), block,
                   0, stream>>>(dev(src), dev(dst), x, y, fill);
    return;
  }
  fill_plane(dst, fill, stream);
  if (src.width && src.height)
    copy_plane(src, dst.row(y) + x * dst.channels, dst.pitch, cudaMemcpyDeviceToDevice, stream);
}

void pad_edge_plane(const PlaneView& src, const PlaneView& dst, cudaStream_t stream) {
  detail::expect_pad(src, dst, 0, 0);
  if (dst.width == 0 || dst.height == 0) return;
  VPIPE_EXPECTS(src.width > 0 && src.height > 0, "pad: an empty picture has no edge to repeat");
  LaunchScope scope("vpipe::pad_edge_plane", stream);
  const dim3 block(128, 2);
  pad_edge_kernel<<<grid2d(static_cast<int>(dst.row_bytes()), dst.height, block), block, 0,
                    stream>>>(dev(src), dev(dst));
}

}  // namespace vpipe::cuda
