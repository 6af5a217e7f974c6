// CUDA colour conversions: 4:2:0 and P010 to and from RGB(A) (see cuda_ops.hpp for the contracts).
#include "kernel_common.cuh"

namespace vpipe::cuda {

namespace {

// Each op converts one 2×2 block at any alignment, and, where every plane's rows allow 8-/16-byte
// accesses, four blocks (8 pixels × 2 rows) with vector luma loads and pixel stores. Chroma is
// resampled by the siting rule of color.hpp (upsample_chroma / downsample_chroma: zimg's
// bilinear), from the neighbouring samples, which the L1 cache holds.

// 4:2:0 (NV12 when kSemi, else planar U and V) → RGB(A).
template <bool kSemi, int kCh>
struct Yuv420ToRgb {
  Plane y, u, v, rgb;
  ColorCoefs c;
  ChromaOffset o;
  bool vec;
  __device__ void chroma(int x, int yy, float (&uv)[2]) const {
    upsample_chroma(
        static_cast<float>(x), static_cast<float>(yy), u.width, u.height, o,
        [this](int k, int j, float(&s)[2]) {
          if (kSemi) {
            const std::uint8_t* p = u.row(j) + 2 * k;
            s[0] = exact_f(p[0]), s[1] = exact_f(p[1]);
          } else {
            s[0] = exact_f(u.row(j)[k]), s[1] = exact_f(v.row(j)[k]);
          }
        },
        uv);
  }
  __device__ void block(int cx, int cy) const {
    for (int dy = 0; dy < 2 && 2 * cy + dy < y.height; ++dy)
      for (int dx = 0; dx < 2 && 2 * cx + dx < y.width; ++dx) {
        const int xx = 2 * cx + dx, yy = 2 * cy + dy;
        float uv[2], r, g, b;
        chroma(xx, yy, uv);
        yuv_to_rgb(c, exact_f(y.row(yy)[xx]), uv[0], uv[1], r, g, b);
        store_rgb(rgb, xx, yy, r, g, b);
      }
  }
  __device__ void group8(int x, int cy) const {
#pragma unroll
    for (int dy = 0; dy < 2; ++dy) {
      const uint2 wy = *reinterpret_cast<const uint2*>(y.row(2 * cy + dy) + x);
      float r[8], g[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        float uv[2];
        chroma(x + i, 2 * cy + dy, uv);
        yuv_to_rgb(c, byte_f(i < 4 ? wy.x : wy.y, i % 4), uv[0], uv[1], r[i], g[i], b[i]);
      }
      store_rgb_px<kCh, 8>(rgb.row(2 * cy + dy) + kCh * x, r, g, b);
    }
  }
};

// RGB(A) → 4:2:0: Y per pixel, each chroma sample from the RGB pixels around it (edges repeat).
template <bool kSemi, int kCh>
struct RgbToYuv420 {
  Plane rgb, y, u, v;
  ColorCoefs c;
  ChromaOffset o;
  bool vec;
  __device__ void store_chroma(int cx, int cy) const {
    float uv[2];
    downsample_chroma(
        cx, cy, o,
        [this](int x, int yy, float(&s)[2]) {
          const std::uint8_t* p =
              rgb.row(clamp_index(yy, y.height)) + clamp_index(x, y.width) * kCh;
          float fy;
          rgb_to_yuv(c, exact_f(p[0]), exact_f(p[1]), exact_f(p[2]), fy, s[0], s[1]);
        },
        uv);
    if (kSemi) {
      std::uint8_t* p = u.row(cy) + 2 * cx;
      p[0] = to_u8(uv[0]);
      p[1] = to_u8(uv[1]);
    } else {
      u.row(cy)[cx] = to_u8(uv[0]);
      v.row(cy)[cx] = to_u8(uv[1]);
    }
  }
  __device__ void block(int cx, int cy) const {
    for (int dy = 0; dy < 2 && 2 * cy + dy < y.height; ++dy)
      for (int dx = 0; dx < 2 && 2 * cx + dx < y.width; ++dx) {
        const int x = 2 * cx + dx, yy = 2 * cy + dy;
        const std::uint8_t* p = rgb.row(yy) + x * kCh;
        float fy, fu, fv;
        rgb_to_yuv(c, exact_f(p[0]), exact_f(p[1]), exact_f(p[2]), fy, fu, fv);
        y.row(yy)[x] = to_u8(fy);
      }
    store_chroma(cx, cy);
  }
  __device__ void group8(int x, int cy) const {
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
      }
      *reinterpret_cast<uint2*>(y.row(2 * cy + dy) + x) = make_uint2(out[0], out[1]);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) store_chroma(x / 2 + k, cy);
  }
};

// P010 (16-bit samples, 10 bits high) → RGB(A).
template <int kCh>
struct P010ToRgb {
  Plane y, uv, rgb;
  ColorCoefs c;
  ChromaOffset o;
  bool vec;
  __device__ void chroma(int x, int yy, float (&s)[2]) const {
    upsample_chroma(
        static_cast<float>(x), static_cast<float>(yy), uv.width, uv.height, o,
        [this](int k, int j, float(&w)[2]) {
          const std::uint8_t* p = uv.row(j) + 4 * k;
          w[0] = p010_chroma(c, p010_word(p)), w[1] = p010_chroma(c, p010_word(p + 2));
        },
        s);
  }
  __device__ void block(int cx, int cy) const {
    for (int dy = 0; dy < 2 && 2 * cy + dy < y.height; ++dy)
      for (int dx = 0; dx < 2 && 2 * cx + dx < y.width; ++dx) {
        const int xx = 2 * cx + dx, yy = 2 * cy + dy;
        float s[2], r, g, b;
        chroma(xx, yy, s);
        yuv_to_rgb(c, p010_luma(c, p010_word(y.row(yy) + 2 * xx)), s[0], s[1], r, g, b);
        store_rgb(rgb, xx, yy, r, g, b);
      }
  }
  // The two 10-bit samples of a little-endian word.
  __device__ static unsigned lo10(std::uint32_t w) { return (w & 0xFFFFu) >> 6; }
  __device__ static unsigned hi10(std::uint32_t w) { return w >> 22; }
  __device__ void group8(int x, int cy) const {
#pragma unroll
    for (int dy = 0; dy < 2; ++dy) {
      const uint4 yw = *reinterpret_cast<const uint4*>(y.row(2 * cy + dy) + 2 * x);
      const std::uint32_t yws[4] = {yw.x, yw.y, yw.z, yw.w};
      float r[8], g[8], b[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        float s[2];
        chroma(x + i, 2 * cy + dy, s);
        yuv_to_rgb(c, p010_luma(c, i % 2 ? hi10(yws[i / 2]) : lo10(yws[i / 2])), s[0], s[1], r[i],
                   g[i], b[i]);
      }
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
  group8_kernel<<<grid2d((width + 7) / 8, (height + 1) / 2, block), block, 0, stream>>>(op, width,
                                                                                        height);
}

}  // namespace

void nv12_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_420(y, uv, rgb, 2);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::nv12_to_rgb", stream);
  const bool vec = aligned(y, 8) && aligned(uv, 8) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(Yuv420ToRgb<true, 4>{dev(y), dev(uv), dev(uv), dev(rgb), color_coefs(spec),
                                       chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
  else
    launch_group8(Yuv420ToRgb<true, 3>{dev(y), dev(uv), dev(uv), dev(rgb), color_coefs(spec),
                                       chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
}

void yuv420p_to_rgb(const PlaneView& y, const PlaneView& u, const PlaneView& v,
                    const PlaneView& rgb, ColorSpec spec, cudaStream_t stream) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::yuv420p_to_rgb", stream);
  const bool vec =
      aligned(y, 8) && aligned(u, 4) && aligned(v, 4) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(Yuv420ToRgb<false, 4>{dev(y), dev(u), dev(v), dev(rgb), color_coefs(spec),
                                        chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
  else
    launch_group8(Yuv420ToRgb<false, 3>{dev(y), dev(u), dev(v), dev(rgb), color_coefs(spec),
                                        chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
}

void rgb_to_nv12(const PlaneView& rgb, const PlaneView& y, const PlaneView& uv, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_420(y, uv, rgb, 2);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::rgb_to_nv12", stream);
  const bool vec = aligned(y, 8) && aligned(uv, 8) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(RgbToYuv420<true, 4>{dev(rgb), dev(y), dev(uv), dev(uv), color_coefs(spec),
                                       chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
  else
    launch_group8(RgbToYuv420<true, 3>{dev(rgb), dev(y), dev(uv), dev(uv), color_coefs(spec),
                                       chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
}

void rgb_to_yuv420p(const PlaneView& rgb, const PlaneView& y, const PlaneView& u,
                    const PlaneView& v, ColorSpec spec, cudaStream_t stream) {
  detail::expect_420(y, u, rgb, 1);
  detail::expect_420(y, v, rgb, 1);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::rgb_to_yuv420p", stream);
  const bool vec =
      aligned(y, 8) && aligned(u, 4) && aligned(v, 4) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(RgbToYuv420<false, 4>{dev(rgb), dev(y), dev(u), dev(v), color_coefs(spec),
                                        chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
  else
    launch_group8(RgbToYuv420<false, 3>{dev(rgb), dev(y), dev(u), dev(v), color_coefs(spec),
                                        chroma_offset(spec.siting), vec},
                  y.width, y.height, stream);
}

void p010_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb, ColorSpec spec,
                 cudaStream_t stream) {
  detail::expect_p010(y, uv, rgb);
  if (y.width == 0 || y.height == 0) return;
  LaunchScope scope("vpipe::p010_to_rgb", stream);
  const bool vec = aligned(y, 16) && aligned(uv, 16) && aligned(rgb, rgb.channels == 4 ? 16 : 8);
  if (rgb.channels == 4)
    launch_group8(
        P010ToRgb<4>{dev(y), dev(uv), dev(rgb), color_coefs(spec), chroma_offset(spec.siting), vec},
        y.width, y.height, stream);
  else
    launch_group8(
        P010ToRgb<3>{dev(y), dev(uv), dev(rgb), color_coefs(spec), chroma_offset(spec.siting), vec},
        y.width, y.height, stream);
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

void interleave_uv(const PlaneView& u, const PlaneView& v, const PlaneView& uv,
                   cudaStream_t stream) {
  VPIPE_EXPECTS(u.width == uv.width && v.width == uv.width && u.height == uv.height &&
                    v.height == uv.height && uv.channels == 2 && u.channels == 1 && v.channels == 1,
                "interleave_uv: U and V planes of the UV plane's size");
  if (uv.width == 0 || uv.height == 0) return;
  LaunchScope scope("vpipe::interleave_uv", stream);
  const dim3 block(32, 8);
  interleave_uv_kernel<<<grid2d(uv.width, uv.height, block), block, 0, stream>>>(dev(u), dev(v),
                                                                                 dev(uv));
  VPIPE_CUDA_TRY(cudaGetLastError());
}

}  // namespace vpipe::cuda
