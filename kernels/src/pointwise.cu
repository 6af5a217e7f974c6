// CUDA pointwise kernels: invert, look-up tables, fill, RGBA overlay (see cuda_ops.hpp for the
// contracts).
#include "kernel_common.cuh"

namespace vpipe::cuda {

namespace {

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
__device__ __forceinline__ std::uint32_t op_word(const Op& op, std::uint32_t w,
                                                 const std::uint8_t* t) {
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
  const std::size_t first =
      (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * width_bytes;
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
  __device__ std::uint8_t operator()(std::uint8_t v, const std::uint8_t* table) const {
    return table[v];
  }
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

// One output byte per thread from its 16-bit little-endian sample.
// A byte copy / fill of a plane: what cudaMemcpy2DAsync / cudaMemset2DAsync
// do, as a kernel, for stream capture (--graphs): a kernel node's pointers can
// be moved in an instantiated graph, a 2D copy's or memset's cannot.
__global__ void copy_bytes_kernel(const std::uint8_t* s, std::size_t sp, std::uint8_t* d,
                                  std::size_t dp, int row_bytes, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < row_bytes && y < height) d[y * dp + x] = s[y * sp + x];
}
__global__ void fill_bytes_kernel(std::uint8_t* d, std::size_t dp, int row_bytes, int height,
                                  std::uint8_t v) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < row_bytes && y < height) d[y * dp + x] = v;
}

__global__ void narrow_kernel(Plane s, Plane d, int shift, int down, unsigned mask) {
  const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (e >= d.width * d.channels || y >= d.height) return;
  const std::uint8_t* p = s.row(y) + 2 * e;
  const unsigned v = ((p[0] | static_cast<unsigned>(p[1]) << 8) >> shift) & mask;
  d.row(y)[e] = static_cast<std::uint8_t>(min(255u, (v + (1u << (down - 1))) >> down));
}

}  // namespace

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

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status{};
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
         status == cudaStreamCaptureStatusActive;
}

void fill_plane(const PlaneView& dst, std::uint8_t value, cudaStream_t stream) {
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::fill_plane", stream);
  if (capturing(stream)) {
    const dim3 block(128, 2);
    const int w = static_cast<int>(dst.row_bytes());
    fill_bytes_kernel<<<grid2d(w, dst.height, block), block, 0, stream>>>(dst.data, dst.pitch, w,
                                                                          dst.height, value);
    return;
  }
  VPIPE_CUDA_TRY(cudaMemset2DAsync(dst.data, dst.pitch, value, dst.row_bytes(),
                                   static_cast<std::size_t>(dst.height), stream));
}

void copy_plane_by_kernel(const PlaneView& src, void* dst, std::size_t dst_pitch,
                          cudaStream_t stream) {
  if (src.width == 0 || src.height == 0) return;
  LaunchScope scope("vpipe::copy_plane", stream);
  const dim3 block(128, 2);
  const int w = static_cast<int>(src.row_bytes());
  copy_bytes_kernel<<<grid2d(w, src.height, block), block, 0, stream>>>(
      src.data, src.pitch, static_cast<std::uint8_t*>(dst), dst_pitch, w, src.height);
}

void narrow_plane(const PlaneView& src, const PlaneView& dst, int depth, int shift,
                  cudaStream_t stream) {
  detail::expect_narrow(src, dst, depth, shift);
  if (dst.width == 0 || dst.height == 0) return;
  LaunchScope scope("vpipe::narrow_plane", stream);
  const dim3 block(128, 2);
  narrow_kernel<<<grid2d(static_cast<int>(dst.row_bytes()), dst.height, block), block, 0, stream>>>(
      dev(src), dev(dst), shift, depth - 8, (1u << depth) - 1);
}

}  // namespace vpipe::cuda
