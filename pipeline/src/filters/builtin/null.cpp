// Built-in filter `null` (FFmpeg's name): passes every frame on unchanged, in any
// format, on either path; a placeholder in a generated chain or a script's
// --vf costs no copy (is_identity: the stage hands the frame on).
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe {
namespace {

class Null final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "null",
            .summary = "Pass every frame on unchanged (no copy): a placeholder in a chain.",
            .create = [](const ParamValues&) { return std::make_unique<Null>(); },
            .formats = "any",
            .cuda = true,
            .example = "null"};
  }
  FrameFormat configure(const FrameFormat& in) override { return in; }
  [[nodiscard]] bool is_identity() const override { return true; }
  // Only called by a caller that ignores is_identity: a plain copy.
  void process(const Frame& in, Frame& out) override {
    for (int p = 0; p < in.num_planes; ++p)
      ref::copy_plane(in.planes[static_cast<std::size_t>(p)],
                      out.planes[static_cast<std::size_t>(p)]);
  }
  void process_cuda(const Frame& in, Frame& out, const CudaContext& ctx) override {
    for (int p = 0; p < in.num_planes; ++p) {
      const auto& d = out.planes[static_cast<std::size_t>(p)];
      cuda::copy_plane(in.planes[static_cast<std::size_t>(p)], d.data, d.pitch,
                       cudaMemcpyDeviceToDevice, ctx.stream);
    }
  }
};

}  // namespace

FilterInfo null_filter_info() { return Null::info(); }

}  // namespace vpipe
