// Built-in filters, timing: delay (a slow stage, to rehearse drops) and stamp (glass-to-glass).
// They run on the CPU through the references in vpipe::kernels (OpenCV), plane by plane, and on the
// CUDA path through vpipe::kernels' CUDA ops; each class's info() says all the registry knows of
// it.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstring>
#include <thread>

#include <cmath>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "common.hpp"
#include "vpipe/kernels/cuda_ops.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/filters/image_file.hpp"
#include "vpipe/pipeline/filters/stamp.hpp"

namespace vpipe {
namespace {

using namespace builtin;

// ---- delay -----------------------------------------------------------------

// A slow stage on purpose: rehearses what a live pipeline does when a filter
// cannot keep up (see --drop).
class Delay final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "delay",
            .summary =
                "Passes frames through after sleeping ms milliseconds each (a deliberately slow "
                "stage, to rehearse the drop policy and latency).",
            .params = {{"ms", ParamType::kInt, "10", 0, 10000, "milliseconds per frame", {}}},
            .create = [](const ParamValues& p) { return std::make_unique<Delay>(p.get_int("ms")); },
            .formats = "8-bit planar YUV and RGB",
            .example = "delay=ms=40"};
  }
  explicit Delay(int ms) : ms_(ms) {}
  // Each output sample is its input sample's alone: the fields stay apart.
  [[nodiscard]] bool keeps_fields() const override { return true; }
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("delay", in);
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    for_each_plane(in, out, [](int, const PlaneView& s, const PlaneView& d) {
      for (int y = 0; y < s.height; ++y) std::memcpy(d.row(y), s.row(y), s.row_bytes());
    });
  }

 private:
  int ms_;
};

// ---- stamp -----------------------------------------------------------------

// The sender's half of glass-to-glass latency (see stamp.hpp).
class Stamp final : public Filter {
 public:
  static FilterInfo info() {
    return {.name = "stamp",
            .summary =
                "Write the wall-clock time into the picture's top rows (64 black/white cells; YUV, "
                "width >= 128): a receiver reading stamps (read_stamps) reports glass-to-glass "
                "latency.",
            .create = [](const ParamValues&) { return std::make_unique<Stamp>(); },
            .formats = "8-bit planar YUV and RGB",
            .example = "stamp"};
  }
  // It draws over the picture's samples and reads none of another row.
  [[nodiscard]] bool keeps_fields() const override { return true; }
  FrameFormat configure(const FrameFormat& in) override {
    expect_planar_8bit("stamp", in);
    if (is_rgb(in.pix_fmt))
      throw not_negotiated(fmt::format("stamp: cannot take {} (YUV only)", to_string(in)));
    if (in.width < 128)
      throw chain_error(fmt::format("stamp: {} is narrower than 128", to_string(in)));
    return in;
  }
  void process(const Frame& in, Frame& out) override {
    for_each_plane(in, out, [](int, const PlaneView& s, const PlaneView& d) {
      for (int y = 0; y < s.height; ++y) std::memcpy(d.row(y), s.row(y), s.row_bytes());
    });
    write_stamp(out.planes[0], stamp_clock_us());
  }
};

}  // namespace

FilterInfo delay_filter_info() { return Delay::info(); }
FilterInfo stamp_filter_info() { return Stamp::info(); }

}  // namespace vpipe
