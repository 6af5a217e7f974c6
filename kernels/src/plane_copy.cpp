#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/cuda_ops.hpp"

namespace vpipe::cuda {

void copy_plane(const PlaneView& src, void* dst, std::size_t dst_pitch, cudaMemcpyKind kind,
                cudaStream_t stream) {
  if (kind == cudaMemcpyDeviceToDevice && capturing(stream))
    return copy_plane_by_kernel(src, dst, dst_pitch, stream);
  VPIPE_CUDA_TRY(cudaMemcpy2DAsync(dst, dst_pitch, src.data, src.pitch, src.row_bytes(),
                                   static_cast<std::size_t>(src.height), kind, stream));
}

}  // namespace vpipe::cuda
