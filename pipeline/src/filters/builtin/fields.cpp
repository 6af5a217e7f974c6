// Built-in filter, fields: deinterlace. Interlaced video (broadcast 1080i and 576i, DV,
// DVD) holds two fields of alternate rows, captured 1/50 or 1/60 s apart: shown or
// resized as one picture, anything that moved is combed. deinterlace keeps the field
// captured first and rebuilds the other's rows from it (ref::deinterlace_plane: bwdif's
// spatial interpolation, one frame out for each frame in, as `bwdif=mode=send_frame`
// without its temporal half); its pictures leave marked progressive (Filter::deinterlaces).
// CPU only: on the CUDA path the chain runs it on the CPU between its CUDA steps.
#include "common.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe {
namespace {

using namespace builtin;

class Deinterlace final : public Filter {
 public:
  enum class Parity { kAuto, kTop, kBottom };

  static FilterInfo info() {
    return {.name = "deinterlace",
            .summary =
                "Make interlaced pictures progressive: keep the field captured first and rebuild "
                "the other's rows from it (bwdif's spatial interpolation), one frame out per "
                "frame in. Put it before a resize on interlaced input.",
            .params =
                {{"parity",
                  ParamType::kChoice,
                  "auto",
                  0,
                  0,
                  "which field comes first: auto (each picture's flag; top where it has none), tff "
                  "or bff",
                  {"auto", "tff", "bff"}},
                 {"deint",
                  ParamType::kChoice,
                  "all",
                  0,
                  0,
                  "all (every picture, as FFmpeg's bwdif) or interlaced (only those flagged so)",
                  {"all", "interlaced"}}},
            .create =
                [](const ParamValues& p) {
                  const std::string& parity = p.get_string("parity");
                  return std::make_unique<Deinterlace>(parity == "tff"   ? Parity::kTop
                                                       : parity == "bff" ? Parity::kBottom
                                                                         : Parity::kAuto,
                                                       p.get_string("deint") == "interlaced");
                },
            .formats = "8-bit planar YUV and RGB",
            .example = "deinterlace,resize=1280x720",
            .ffmpeg = "yadif bwdif yadif_cuda bwdif_cuda"};
  }
  Deinterlace(Parity parity, bool flagged_only) : parity_(parity), flagged_only_(flagged_only) {}
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("deinterlace", in);
    return in;
  }
  [[nodiscard]] bool deinterlaces() const override { return true; }
  void process(const Frame& in, Frame& out) override {
    const bool flagged = in.fields != FieldOrder::kProgressive;
    const bool keep_top =
        parity_ == Parity::kAuto ? in.fields != FieldOrder::kBottomFirst : parity_ == Parity::kTop;
    for_each_plane(in, out, [&](int, const PlaneView& s, const PlaneView& d) {
      if (flagged_only_ && !flagged)
        ref::copy_plane(s, d);
      else
        ref::deinterlace_plane(s, d, keep_top);
    });
  }

 private:
  Parity parity_;
  bool flagged_only_;
};

}  // namespace

FilterInfo deinterlace_filter_info() { return Deinterlace::info(); }

}  // namespace vpipe
