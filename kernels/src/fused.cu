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

template <Sample kY, Sample kC>
__global__ void nv12_resize_rgb_kernel(Plane y, Plane uv, Plane rgb, ColorCoefs c, Scale ys,
                                       Scale cs) {
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
      const float fy =
          (static_cast<float>(r0[2 * x] + r0[2 * x + 1] + r1[2 * x] + r1[2 * x + 1])) * 0.25f;
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
    const float fy =
        (byte_f(la, i) + byte_f(la, i + 1) + byte_f(lb, i) + byte_f(lb, i + 1)) * 0.25f;
    yuv_to_rgb(c, fy, byte_f(cw, i), byte_f(cw, i + 1), rr[k], gg[k], bb[k]);
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
  // Exact halves, bilinear or area: the luma sample is a 2×2 mean either way
  // and the chroma plane is the output's size.
  if (interp != ref::Interp::kNearest && y.width == 2 * rgb.width && y.height == 2 * rgb.height &&
      aligned(y, 8) && aligned(uv, 8) && aligned(rgb, rgb.channels == 4 ? 16 : 4)) {
    const dim3 grid = grid2d((rgb.width + 3) / 4, rgb.height, block);
    if (rgb.channels == 4)
      nv12_half_rgb_kernel<4>
          <<<grid, block, 0, stream>>>(dev(y), dev(uv), dev(rgb), color_coefs(spec));
    else
      nv12_half_rgb_kernel<3>
          <<<grid, block, 0, stream>>>(dev(y), dev(uv), dev(rgb), color_coefs(spec));
    return;
  }
  auto scale = [&](const PlaneView& p) {
    return Scale{static_cast<float>(p.width) / rgb.width, static_cast<float>(p.height) / rgb.height,
                 static_cast<double>(p.width) / rgb.width,
                 static_cast<double>(p.height) / rgb.height};
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
