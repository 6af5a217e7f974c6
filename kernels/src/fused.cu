// CUDA fused pass: NV12 resized straight to RGB(A) (see cuda_ops.hpp for the contracts).
#include "kernel_common.cuh"

namespace vpipe::cuda {

namespace {

// ---- fused ---------------------------------------------------------------------

// Sampling of one plane in the fused pass: bilinear, nearest (resize_plane's
// floor(x * scale)), or area (the footprint's pixels weighted by overlap, as
// resize_plane's; only where the plane shrinks in both directions).
enum class Sample { kBilinear, kNearest, kArea };

struct Scale {
  float fx, fy;   // bilinear and area
  double dx, dy;  // nearest
};

// Channels 0..n-1 of plane p at output pixel (x, y).
template <Sample kMode, int kN>
__device__ __forceinline__ void sample_plane(const Plane& p, int x, int y, Scale s,
                                             float (&out)[kN]) {
  if constexpr (kMode == Sample::kBilinear) {
    const Bilinear b(p, (x + 0.5f) * s.fx - 0.5f,
                     (y + 0.5f) * s.fy - 0.5f);  // shared by the channels
#pragma unroll
    for (int k = 0; k < kN; ++k) out[k] = b(p.channels, k);
  } else if constexpr (kMode == Sample::kNearest) {
    const int xs = min(static_cast<int>(floor(x * s.dx)), p.width - 1);
    const int ys = min(static_cast<int>(floor(y * s.dy)), p.height - 1);
#pragma unroll
    for (int k = 0; k < kN; ++k) out[k] = exact_f(p.row(ys)[xs * p.channels + k]);
  } else {
    const AreaSpan ax(x, s.fx, p.width), ay(y, s.fy, p.height);
#pragma unroll
    for (int k = 0; k < kN; ++k) out[k] = area_mean(p, ax, ay, k);
  }
}

// Cb and Cr at output pixel (x, y) by the siting rule (color.hpp): bilinear at the chroma
// coordinate of the luma sample's, or the luma footprint halved and moved by the siting.
template <Sample kMode>
__device__ __forceinline__ void sample_chroma(const Plane& uv, int x, int y, Scale ls, Scale cs,
                                              ChromaOffset o, float (&out)[2]) {
  if constexpr (kMode == Sample::kBilinear) {
    upsample_chroma((x + 0.5f) * ls.fx - 0.5f, (y + 0.5f) * ls.fy - 0.5f, uv.width, uv.height, o,
                    [&](int k, int j, float(&s)[2]) {
                      const std::uint8_t* p = uv.row(j) + 2 * k;
                      s[0] = exact_f(p[0]), s[1] = exact_f(p[1]);
                    },
                    out);
  } else if constexpr (kMode == Sample::kArea) {
    const AreaSpan ax(x, 0.5f * ls.fx, uv.width, chroma_area_shift(o.x));
    const AreaSpan ay(y, 0.5f * ls.fy, uv.height, chroma_area_shift(o.y));
    out[0] = area_mean(uv, ax, ay, 0), out[1] = area_mean(uv, ax, ay, 1);
  } else {
    sample_plane<Sample::kNearest>(uv, x, y, cs, out);
  }
}

template <Sample kY, Sample kC>
__global__ void nv12_resize_rgb_kernel(Plane y, Plane uv, Plane rgb, ColorCoefs c, ChromaOffset o,
                                       Scale ys, Scale cs) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, yy = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= rgb.width || yy >= rgb.height) return;
  float fy[1], fc[2];
  sample_plane<kY>(y, x, yy, ys, fy);
  sample_chroma<kC>(uv, x, yy, ys, cs, o, fc);
  float r, g, b;
  yuv_to_rgb(c, fy[0], fc[0], fc[1], r, g, b);
  store_rgb(rgb, x, yy, r, g, b);
}

// The fused pass at exactly half size: the luma sample is the mean of a 2×2
// block and the chroma plane is already the output's size, so 4 output pixels
// take two 8-byte luma loads per row, one 8-byte chroma load (and, left-sited,
// the next sample) and one 16-byte (RGBA) store. The values are the general
// kernel's: (a + b + c + d) / 4 unrounded; chroma as it is where centre-sited,
// else ¾ of its sample and ¼ of the next (the output pixel's centre is a
// quarter chroma sample to the right of a left-sited sample). Vertically
// centred sitings only.
template <int kCh, bool kLeft>
__global__ void nv12_half_rgb_kernel(Plane y, Plane uv, Plane rgb, ColorCoefs c) {
  const int x0 = 4 * static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int yy = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x0 >= rgb.width || yy >= rgb.height) return;
  const std::uint8_t* r0 = y.row(2 * yy);
  const std::uint8_t* r1 = y.row(2 * yy + 1);
  const std::uint8_t* cr = uv.row(yy);
  auto sited = [&](float here, float next) { return kLeft ? 0.75f * here + 0.25f * next : here; };
  if (x0 + 4 > rgb.width) {  // the row's ragged end
    for (int x = x0; x < rgb.width; ++x) {
      const float fy =
          (static_cast<float>(r0[2 * x] + r0[2 * x + 1] + r1[2 * x] + r1[2 * x + 1])) * 0.25f;
      const int n = 2 * min(x + 1, uv.width - 1);
      float r, g, b;
      yuv_to_rgb(c, fy, sited(cr[2 * x], cr[n]), sited(cr[2 * x + 1], cr[n + 1]), r, g, b);
      store_rgb(rgb, x, yy, r, g, b);
    }
    return;
  }
  const uint2 a = *reinterpret_cast<const uint2*>(r0 + 2 * x0);
  const uint2 b = *reinterpret_cast<const uint2*>(r1 + 2 * x0);
  const uint2 w = *reinterpret_cast<const uint2*>(cr + 2 * x0);
  float cu[5], cv[5];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t cw = k < 2 ? w.x : w.y;
    cu[k] = byte_f(cw, 2 * (k % 2)), cv[k] = byte_f(cw, 2 * (k % 2) + 1);
  }
  if (kLeft) {
    const std::uint8_t* n = cr + 2 * min(x0 + 4, uv.width - 1);
    cu[4] = exact_f(n[0]), cv[4] = exact_f(n[1]);
  }
  float rr[4], gg[4], bb[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t la = k < 2 ? a.x : a.y, lb = k < 2 ? b.x : b.y;
    const int i = 2 * (k % 2);
    const float fy =
        (byte_f(la, i) + byte_f(la, i + 1) + byte_f(lb, i) + byte_f(lb, i + 1)) * 0.25f;
    yuv_to_rgb(c, fy, sited(cu[k], cu[k + 1]), sited(cv[k], cv[k + 1]), rr[k], gg[k], bb[k]);
  }
  store_rgb_px<kCh, 4>(rgb.row(yy) + kCh * x0, rr, gg, bb);
}

}  // namespace

void nv12_resize_to_rgb(const PlaneView& y, const PlaneView& uv, const PlaneView& rgb,
                        ColorSpec spec, ref::Interp interp, cudaStream_t stream) {
  detail::expect_nv12_to_any_rgb(y, uv, rgb);
  if (rgb.width == 0 || rgb.height == 0) return;
  LaunchScope scope("vpipe::nv12_resize_to_rgb", stream);
  const dim3 block(32, 8);
  const ChromaOffset o = chroma_offset(spec.siting);
  // Exact halves, bilinear or area: the luma sample is a 2×2 mean either way
  // and the chroma plane is the output's size.
  if (interp != ref::Interp::kNearest && y.width == 2 * rgb.width && y.height == 2 * rgb.height &&
      o.y == 0.5f && aligned(y, 8) && aligned(uv, 8) && aligned(rgb, rgb.channels == 4 ? 16 : 4)) {
    const dim3 grid = grid2d((rgb.width + 3) / 4, rgb.height, block);
    auto half = [&](auto kernel) {
      kernel<<<grid, block, 0, stream>>>(dev(y), dev(uv), dev(rgb), color_coefs(spec));
    };
    const bool left = o.x == 0.f;
    if (rgb.channels == 4)
      left ? half(nv12_half_rgb_kernel<4, true>) : half(nv12_half_rgb_kernel<4, false>);
    else
      left ? half(nv12_half_rgb_kernel<3, true>) : half(nv12_half_rgb_kernel<3, false>);
    return;
  }
  auto scale = [&](const PlaneView& p) {
    return Scale{static_cast<float>(p.width) / rgb.width, static_cast<float>(p.height) / rgb.height,
                 static_cast<double>(p.width) / rgb.width,
                 static_cast<double>(p.height) / rgb.height};
  };
  const Scale ys = scale(y), cs = scale(uv);
  const dim3 grid = grid2d(rgb.width, rgb.height, block);
  const auto args = std::make_tuple(dev(y), dev(uv), dev(rgb), color_coefs(spec), o, ys, cs);
  auto launch = [&](auto kernel) {
    std::apply([&](auto... a) { kernel<<<grid, block, 0, stream>>>(a...); }, args);
  };
  // Chroma shrinks by area where the luma footprint is two chroma samples or more.
  const bool y_area = interp == ref::Interp::kArea && ys.dx >= 1 && ys.dy >= 1;
  const bool c_area = interp == ref::Interp::kArea && ys.dx >= 2 && ys.dy >= 2;
  if (interp == ref::Interp::kNearest)
    launch(nv12_resize_rgb_kernel<Sample::kNearest, Sample::kNearest>);
  else if (y_area && c_area)
    launch(nv12_resize_rgb_kernel<Sample::kArea, Sample::kArea>);
  else if (y_area)
    launch(nv12_resize_rgb_kernel<Sample::kArea, Sample::kBilinear>);
  else
    launch(nv12_resize_rgb_kernel<Sample::kBilinear, Sample::kBilinear>);
}

}  // namespace vpipe::cuda
