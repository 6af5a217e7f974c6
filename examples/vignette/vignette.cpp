// vignette: darkens the picture towards its corners, as a lens does.
// A complete vpipe filter plugin: a contract, format negotiation, a CPU
// implementation and a CUDA one, and one registration line.
#include <cstring>

#include "vignette_kernel.hpp"
#include "vpipe/pipeline/filters/filter.hpp"

namespace {

class Vignette final : public vpipe::Filter {
 public:
  // The contract: name, help, typed parameters (range, default, help).
  static vpipe::FilterInfo info() {
    return {.name = "vignette",
            .summary = "Darken towards the corners (luma only).",
            .params = {{"strength",
                        vpipe::ParamType::kFloat,
                        "0.5",
                        0,
                        1,
                        "darkening at the corners: 0 none, 1 black",
                        {}}},
            .create =
                [](const vpipe::ParamValues& p) {
                  return std::make_unique<Vignette>(static_cast<float>(p.get_float("strength")));
                },
            .formats = "yuv420p, nv12",
            .cuda = true,                         // process_cuda below: said once, here
            .example = "vignette=strength=0.7"};  // `vpipe filters` shows it
  }
  explicit Vignette(float strength) : strength_(strength) {}

  // Format negotiation: say what is accepted; the output has the input's format.
  vpipe::FrameFormat configure(const vpipe::FrameFormat& in) override {
    if (in.pix_fmt != AV_PIX_FMT_YUV420P && in.pix_fmt != AV_PIX_FMT_NV12)
      throw vpipe::not_negotiated("vignette: takes yuv420p or nv12, got " + vpipe::to_string(in));
    return in;
  }
  [[nodiscard]] bool is_identity() const override { return strength_ == 0; }
  // Each output sample comes from its own input sample: interlaced fields stay apart.
  [[nodiscard]] bool keeps_fields() const override { return true; }

  // CPU: luma scaled, chroma copied.
  void process(const vpipe::Frame& in, vpipe::Frame& out) override {
    const vpipe::PlaneView& s = in.planes[0];
    const vpipe::PlaneView& d = out.planes[0];
    for (int y = 0; y < s.height; ++y)
      for (int x = 0; x < s.width; ++x)
        d.row(y)[x] =
            vignette_apply(s.row(y)[x], vignette_gain(x, y, s.width, s.height, strength_));
    for (int p = 1; p < in.num_planes; ++p)
      for (int y = 0; y < in.planes[p].height; ++y)
        std::memcpy(out.planes[p].row(y), in.planes[p].row(y), in.planes[p].row_bytes());
  }

  // CUDA (info's `cuda = true` says it exists): the same on ctx.stream
  // (device frames), never synchronizing.
  void process_cuda(const vpipe::Frame& in, vpipe::Frame& out,
                    const vpipe::CudaContext& ctx) override {
    const vpipe::PlaneView& s = in.planes[0];
    const vpipe::PlaneView& d = out.planes[0];
    vignette_luma_cuda(s.data, s.pitch, d.data, d.pitch, s.width, s.height, strength_, ctx.stream);
    for (int p = 1; p < in.num_planes; ++p) {
      const vpipe::PlaneView& sp = in.planes[p];
      const vpipe::PlaneView& dp = out.planes[p];
      cudaMemcpy2DAsync(dp.data, dp.pitch, sp.data, sp.pitch, sp.row_bytes(),
                        static_cast<std::size_t>(sp.height), cudaMemcpyDeviceToDevice, ctx.stream);
    }
  }

 private:
  float strength_;
};

}  // namespace

VPIPE_REGISTER_FILTER(Vignette);
