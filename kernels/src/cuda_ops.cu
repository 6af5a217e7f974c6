// CUDA filter kernels (see cuda_ops.hpp for the contracts).
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
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

__device__ __forceinline__ void store_rgb(const Plane& o, int x, int y, float r, float g, float b) {
  std::uint8_t* p = o.row(y) + x * o.channels;
  if (o.channels == 4 && o.aligned4) {  // one 32-bit store instead of four byte stores
    *reinterpret_cast<uchar4*>(p) = make_uchar4(clamp_u8(r), clamp_u8(g), clamp_u8(b), 255);
    return;
  }
  p[0] = clamp_u8(r);
  p[1] = clamp_u8(g);
  p[2] = clamp_u8(b);
  if (o.channels == 4) p[3] = 255;
}

// ---- colour ------------------------------------------------------------------

// One thread per 2×2 block: the chroma sample is read once for four pixels.
template <bool kSemiPlanar>
__global__ void yuv420_to_rgb_kernel(Plane y, Plane u, Plane v, Plane rgb, ColorCoefs c) {
  const int cx = blockIdx.x * blockDim.x + threadIdx.x, cy = blockIdx.y * blockDim.y + threadIdx.y;
  if (2 * cx >= y.width || 2 * cy >= y.height) return;
  float cu, cv;
  if (kSemiPlanar) {
    const std::uint8_t* p = u.row(cy) + 2 * cx;
    cu = p[0];
    cv = p[1];
  } else {
    cu = u.row(cy)[cx];
    cv = v.row(cy)[cx];
  }
  for (int dy = 0; dy < 2; ++dy) {
    const int yy = 2 * cy + dy;
    if (yy >= y.height) break;
    for (int dx = 0; dx < 2; ++dx) {
      const int x = 2 * cx + dx;
      if (x >= y.width) break;
      float r, g, b;
      yuv_to_rgb(c, y.row(yy)[x], cu, cv, r, g, b);
      store_rgb(rgb, x, yy, r, g, b);
    }
  }
}

template <bool kSemiPlanar>
__global__ void rgb_to_yuv420_kernel(Plane rgb, Plane y, Plane u, Plane v, ColorCoefs c) {
  const int cx = blockIdx.x * blockDim.x + threadIdx.x, cy = blockIdx.y * blockDim.y + threadIdx.y;
  if (2 * cx >= y.width || 2 * cy >= y.height) return;
  float su = 0, sv = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int x = min(2 * cx + dx, y.width - 1), yy = min(2 * cy + dy, y.height - 1);
      const std::uint8_t* p = rgb.row(yy) + x * rgb.channels;
      float fy, fu, fv;
      rgb_to_yuv(c, p[0], p[1], p[2], fy, fu, fv);
      if (2 * cx + dx < y.width && 2 * cy + dy < y.height) y.row(yy)[x] = clamp_u8(fy);
      su += fu;
      sv += fv;
    }
  if (kSemiPlanar) {
    std::uint8_t* p = u.row(cy) + 2 * cx;
    p[0] = clamp_u8(su / 4);
    p[1] = clamp_u8(sv / 4);
  } else {
    u.row(cy)[cx] = clamp_u8(su / 4);
    v.row(cy)[cx] = clamp_u8(sv / 4);
  }
}


// ---- geometry ------------------------------------------------------------------

__device__ __forceinline__ float bilinear(const Plane& p, float fx, float fy, int ch) {
  const int x0 = static_cast<int>(floorf(fx)), y0 = static_cast<int>(floorf(fy));
  const float ax = fx - x0, ay = fy - y0;
  const int xa = min(max(x0, 0), p.width - 1), xb = min(max(x0 + 1, 0), p.width - 1);
  const int ya = min(max(y0, 0), p.height - 1), yb = min(max(y0 + 1, 0), p.height - 1);
  const std::uint8_t* ra = p.row(ya);
  const std::uint8_t* rb = p.row(yb);
  const int c = p.channels;
  return (1 - ay) * ((1 - ax) * ra[xa * c + ch] + ax * ra[xb * c + ch]) +
         ay * ((1 - ax) * rb[xa * c + ch] + ax * rb[xb * c + ch]);
}

__global__ void resize_bilinear_kernel(Plane s, Plane d, float sx, float sy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  const float fx = (x + 0.5f) * sx - 0.5f, fy = (y + 0.5f) * sy - 0.5f;
  for (int ch = 0; ch < d.channels; ++ch) d.row(y)[x * d.channels + ch] = clamp_u8(bilinear(s, fx, fy, ch));
}

__global__ void resize_nearest_kernel(Plane s, Plane d, double sx, double sy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  const int xs = min(static_cast<int>(floor(x * sx)), s.width - 1);
  const int ys = min(static_cast<int>(floor(y * sy)), s.height - 1);
  for (int ch = 0; ch < d.channels; ++ch)
    d.row(y)[x * d.channels + ch] = s.row(ys)[xs * s.channels + ch];
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
  for (int ch = 0; ch < d.channels; ++ch) d.row(y)[x * d.channels + ch] = clamp_u8(acc[ch] * inv);
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

// Each thread of the vertical pass makes kStrip consecutive outputs from
// kStrip + 2r inputs, a sliding window: every input is loaded once per strip
// instead of once per tap. Radii up to kMaxFixedRadius are compile-time
// constants (kRadius), so the loops unroll and the weights sit in registers;
// profiling showed the generic loops compute-bound.
constexpr int kStrip = 8;
constexpr int kMaxFixedRadius = 8;

// Horizontal pass: u8 → float (row-major, width*channels floats per row).
// A block stages its rows' pixels plus the 2r halo in shared memory with
// coalesced loads (borders reflected there), then each thread makes one
// output pixel from shared memory: global reads and writes stay coalesced.
constexpr int kHTile = 128, kHRows = 4;
// __grid_constant__: the weights may be indexed at run time; without it the
// compiler may copy the whole 1.5 KB parameter into each thread's local memory.
template <int kRadius>
__global__ void blur_h_kernel(Plane s, float* tmp, const __grid_constant__ GaussKernel k) {
  extern __shared__ std::uint8_t tile[];
  const int r = kRadius >= 0 ? kRadius : k.radius;
  const int ch = s.channels, span = (kHTile + 2 * r) * ch;
  const int x_base = blockIdx.x * kHTile;
  const int y = blockIdx.y * kHRows + threadIdx.y;
  std::uint8_t* trow = tile + threadIdx.y * span;
  if (y < s.height) {
    const std::uint8_t* row = s.row(y);
    if (ch == 1) {
      for (int i = threadIdx.x; i < span; i += kHTile) trow[i] = row[reflect101(x_base - r + i, s.width)];
    } else {
      for (int i = threadIdx.x; i < span; i += kHTile)
        trow[i] = row[reflect101(x_base - r + i / ch, s.width) * ch + i % ch];
    }
  }
  __syncthreads();
  const int x = x_base + threadIdx.x;
  if (x >= s.width || y >= s.height) return;
  for (int c = 0; c < ch; ++c) {
    float acc = 0;
    if constexpr (kRadius >= 0) {
#pragma unroll
      for (int i = 0; i <= 2 * kRadius; ++i) acc += k.w[i] * trow[(threadIdx.x + i) * ch + c];
    } else {
      for (int i = 0; i <= 2 * r; ++i) acc += k.w[i] * trow[(threadIdx.x + i) * ch + c];
    }
    tmp[(static_cast<std::size_t>(y) * s.width + x) * ch + c] = acc;
  }
}

// Vertical pass: float → u8, kStrip rows per thread.
// amount != 0: unsharp mask, dst = orig + amount * (orig − blurred), in float.
template <int kRadius>
__global__ void blur_v_kernel(const float* tmp, Plane d, const __grid_constant__ GaussKernel k,
                              Plane orig, float amount) {
  const int xb = blockIdx.x * blockDim.x + threadIdx.x;  // byte (pixel × channel) in the row
  const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * kStrip;
  const int row_elems = d.width * d.channels;
  if (xb >= row_elems || y0 >= d.height) return;
  const int r = kRadius >= 0 ? kRadius : k.radius;
  const bool interior = y0 - r >= 0 && y0 + kStrip + r <= d.height;
  auto load = [&](int t) {
    const int ys = y0 - r + t;
    return tmp[static_cast<std::size_t>(interior ? ys : reflect101(ys, d.height)) * row_elems + xb];
  };
  float acc[kStrip] = {};
  if constexpr (kRadius >= 0) {
    float w[2 * kRadius + 1];
#pragma unroll
    for (int i = 0; i <= 2 * kRadius; ++i) w[i] = k.w[i];
#pragma unroll
    for (int t = 0; t < kStrip + 2 * kRadius; ++t) {
      const float v = load(t);
#pragma unroll
      for (int j = 0; j < kStrip; ++j)
        if (t - j >= 0 && t - j <= 2 * kRadius) acc[j] += w[t - j] * v;
    }
  } else {
    for (int t = 0; t < kStrip + 2 * r; ++t) {
      const float v = load(t);
#pragma unroll
      for (int j = 0; j < kStrip; ++j) {
        const int i = t - j;
        if (i >= 0 && i <= 2 * r) acc[j] += k.w[i] * v;
      }
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
    d.row(y0 + j)[xb] = clamp_u8(v);
  }
}

template <int kRadius>
void launch_blur(const PlaneView& src, const PlaneView& dst, float* tmp, const GaussKernel& k,
                 float amount, cudaStream_t stream) {
  const dim3 hblock(kHTile, kHRows), vblock(64, 4);
  const std::size_t smem = static_cast<std::size_t>(kHRows) * (kHTile + 2 * k.radius) * src.channels;
  blur_h_kernel<kRadius><<<grid2d(src.width, src.height, hblock), hblock, smem, stream>>>(dev(src), tmp, k);
  blur_v_kernel<kRadius><<<grid2d(src.width * src.channels, (src.height + kStrip - 1) / kStrip, vblock),
                           vblock, 0, stream>>>(tmp, dev(dst), k, dev(src), amount);
}

template <int... R>
void dispatch_blur(std::integer_sequence<int, R...>, const PlaneView& src, const PlaneView& dst,
                   float* tmp, const GaussKernel& k, float amount, cudaStream_t stream) {
  const bool fixed =
      ((k.radius == R ? (launch_blur<R>(src, dst, tmp, k, amount, stream), true) : false) || ...);
  if (!fixed) launch_blur<-1>(src, dst, tmp, k, amount, stream);
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


// ---- Sobel, overlay, P010 ------------------------------------------------------

__global__ void sobel_kernel(Plane s, Plane d) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  const int xm = reflect101(x - 1, s.width), xp = reflect101(x + 1, s.width);
  const std::uint8_t* rm = s.row(reflect101(y - 1, s.height));
  const std::uint8_t* r0 = s.row(y);
  const std::uint8_t* rp = s.row(reflect101(y + 1, s.height));
  const int c = s.channels;
  for (int ch = 0; ch < c; ++ch) {
    const int gx = (rm[xp * c + ch] + 2 * r0[xp * c + ch] + rp[xp * c + ch]) -
                   (rm[xm * c + ch] + 2 * r0[xm * c + ch] + rp[xm * c + ch]);
    const int gy = (rp[xm * c + ch] + 2 * rp[x * c + ch] + rp[xp * c + ch]) -
                   (rm[xm * c + ch] + 2 * rm[x * c + ch] + rm[xp * c + ch]);
    d.row(y)[x * c + ch] = clamp_u8(sqrtf(static_cast<float>(gx * gx + gy * gy)));
  }
}

__global__ void overlay_kernel(Plane base, Plane over, Plane d, int ox, int oy, float opacity) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  const int u = x - ox, v = y - oy;
  const bool inside = u >= 0 && v >= 0 && u < over.width && v < over.height;
  overlay_pixel(base.row(y) + x * base.channels, inside ? over.row(v) + u * 4 : nullptr,
                d.row(y) + x * d.channels, d.channels, opacity);
}

__global__ void p010_kernel(Plane y, Plane uv, Plane rgb, ColorCoefs c) {
  const int cx = blockIdx.x * blockDim.x + threadIdx.x, cy = blockIdx.y * blockDim.y + threadIdx.y;
  if (2 * cx >= y.width || 2 * cy >= y.height) return;
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

__global__ void nv12_resize_rgb_kernel(Plane y, Plane uv, Plane rgb, ColorCoefs c, float sx,
                                       float sy, float csx, float csy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, yy = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= rgb.width || yy >= rgb.height) return;
  const float fy = bilinear(y, (x + 0.5f) * sx - 0.5f, (yy + 0.5f) * sy - 0.5f, 0);
  const float cxf = (x + 0.5f) * csx - 0.5f, cyf = (yy + 0.5f) * csy - 0.5f;
  const float fu = bilinear(uv, cxf, cyf, 0), fv = bilinear(uv, cxf, cyf, 1);
  float r, g, b;
  yuv_to_rgb(c, fy, fu, fv, r, g, b);
  store_rgb(rgb, x, yy, r, g, b);
}

}  // namespace

// ---- public API ------------------------------------------------------------------

void nv12_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_420(y, uv, rgb, 2);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::nv12_to_rgb", stream);
  const dim3 block(32, 8);
  yuv420_to_rgb_kernel<true><<<grid2d(uv.width, uv.height, block), block, 0, stream>>>(
      dev(y), dev(uv), dev(uv), dev(rgb), color_coefs(spec));
}

void yuv420p_to_rgb(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                    const PlaneView& rgb, ColorSpec spec, cudaStream_t stream) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::yuv420p_to_rgb", stream);
  const dim3 block(32, 8);
  yuv420_to_rgb_kernel<false><<<grid2d(u.width, u.height, block), block, 0, stream>>>(
      dev(y), dev(u), dev(v), dev(rgb), color_coefs(spec));
}

void rgb_to_nv12(const PlaneView& rgb, const PlaneView& y, const PlaneView& uv, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_420(y, uv, rgb, 2);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::rgb_to_nv12", stream);
  const dim3 block(32, 8);
  rgb_to_yuv420_kernel<true><<<grid2d(uv.width, uv.height, block), block, 0, stream>>>(
      dev(rgb), dev(y), dev(uv), dev(uv), color_coefs(spec));
}

void rgb_to_yuv420p(const PlaneView& rgb, const PlaneView& y, const PlaneView& u,
                    const PlaneView& v, ColorSpec spec, cudaStream_t stream) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::rgb_to_yuv420p", stream);
  const dim3 block(32, 8);
  rgb_to_yuv420_kernel<false><<<grid2d(u.width, u.height, block), block, 0, stream>>>(
      dev(rgb), dev(y), dev(u), dev(v), color_coefs(spec));
}

void resize_plane(const PlaneView& src, const PlaneView& dst, ref::Interp interp,
                  cudaStream_t stream) {
  VPIPE_EXPECTS(src.channels == dst.channels && src.channels <= 4, "resize: channel counts differ");
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::resize_plane", stream);
  const dim3 block(32, 8), grid = grid2d(dst.width, dst.height, block);
  const double sx = static_cast<double>(src.width) / dst.width;
  const double sy = static_cast<double>(src.height) / dst.height;
  if (interp == ref::Interp::kNearest) {
    resize_nearest_kernel<<<grid, block, 0, stream>>>(dev(src), dev(dst), sx, sy);
  } else if (interp == ref::Interp::kArea && sx >= 1 && sy >= 1) {
    resize_area_kernel<<<grid, block, 0, stream>>>(dev(src), dev(dst), sx, sy);
  } else {
    resize_bilinear_kernel<<<grid, block, 0, stream>>>(dev(src), dev(dst), static_cast<float>(sx),
                                                       static_cast<float>(sy));
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
  const std::size_t tmp_bytes = src.row_bytes() * static_cast<std::size_t>(src.height) * sizeof(float);
  LaunchScope scope(name, stream);
  auto* tmp = static_cast<float*>(scratch.allocate(tmp_bytes, stream));
  dispatch_blur(std::make_integer_sequence<int, kMaxFixedRadius + 1>{}, src, dst, tmp, k, amount, stream);
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
  const dim3 block(32, 8);
  sobel_kernel<<<grid2d(dst.width, dst.height, block), block, 0, stream>>>(dev(src), dev(dst));
}

void pad_plane(const PlaneView& src, const PlaneView& dst, int x, int y, std::uint8_t fill,
               cudaStream_t stream) {
  detail::expect_pad(src, dst, x, y);
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::pad_plane", stream);
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
  overlay_kernel<<<grid2d(dst.width, dst.height, block), block, 0, stream>>>(
      dev(base), dev(overlay), dev(dst), x, y, opacity);
}

void p010_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_p010(y, uv, rgb);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::p010_to_rgb", stream);
  const dim3 block(32, 8);
  p010_kernel<<<grid2d(uv.width, uv.height, block), block, 0, stream>>>(dev(y), dev(uv), dev(rgb),
                                                                      color_coefs(spec));
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

void fill_plane(const PlaneView& dst, std::uint8_t value, cudaStream_t stream) {
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::fill_plane", stream);
  VPIPE_CUDA_TRY(cudaMemset2DAsync(dst.data, dst.pitch, value, dst.row_bytes(),
                                   static_cast<std::size_t>(dst.height), stream));
}

void nv12_resize_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb,
                        ColorSpec spec, cudaStream_t stream) {
  detail::expect_nv12_to_any_rgb(y, uv, rgb);
  if (rgb.width == 0 || rgb.height == 0) return;
  LaunchScope scope("vpipe::nv12_resize_to_rgb", stream);
  const dim3 block(32, 8);
  nv12_resize_rgb_kernel<<<grid2d(rgb.width, rgb.height, block), block, 0, stream>>>(
      dev(y), dev(uv), dev(rgb), color_coefs(spec), static_cast<float>(y.width) / rgb.width,
      static_cast<float>(y.height) / rgb.height, static_cast<float>(uv.width) / rgb.width,
      static_cast<float>(uv.height) / rgb.height);
}

}  // namespace vpipe::cuda
