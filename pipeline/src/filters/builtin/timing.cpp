// Built-in filters, timing: fps (a frame-rate change), delay (a slow stage, to rehearse drops) and
// stamp (glass-to-glass).
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
#include <libavutil/parseutils.h>
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

// ---- fps -------------------------------------------------------------------

// FFmpeg's round= names, as its fps filter takes them.
constexpr std::array<std::pair<std::string_view, AVRounding>, 5> kRoundings{{
    {"near", AV_ROUND_NEAR_INF},
    {"zero", AV_ROUND_ZERO},
    {"inf", AV_ROUND_INF},
    {"down", AV_ROUND_DOWN},
    {"up", AV_ROUND_UP},
}};

AVRounding rounding_named(const std::string& name) {
  for (const auto& [n, r] : kRoundings)
    if (n == name) return r;
  throw logic_error("fps: round " + name + " is not in its choices");  // parse_params checked it
}

// "25", "30000/1001", "29.97", or one of FFmpeg's names (ntsc, pal, film, ntsc_film).
AVRational parse_rate(std::string text) {
  if (text == "ntsc_film") text = "ntsc-film";  // FFmpeg's fps filter's name for 24000/1001
  AVRational r{0, 1};
  if (av_parse_video_rate(&r, text.c_str()) < 0 || r.num <= 0 || r.den <= 0)
    throw chain_error(fmt::format(
        "fps: '{}' is not a frame rate (a number such as 25 or 29.97, a fraction such as "
        "30000/1001, or ntsc, pal, film, ntsc_film)",
        text));
  if (av_q2d(r) > 1000)
    throw chain_error(fmt::format("fps: {} is more than 1000 frames a second", text));
  return r;
}

// Changes the frame rate the way FFmpeg's fps filter does (FpsClock, rate_stage.hpp): frames
// are dropped or repeated, never blended; their pixels are untouched, so it runs on host and
// device frames alike, on both paths.
class Fps final : public Filter {
 public:
  static FilterInfo info() {
    std::vector<std::string> roundings;
    for (const auto& [n, r] : kRoundings) roundings.emplace_back(n);
    return {.name = "fps",
            .summary =
                "Change the frame rate, as FFmpeg's fps filter does: each tick of the new rate "
                "shows the last frame at or before it (times rounded to the nearest tick), so "
                "frames are dropped or repeated, never blended; the output runs from the first "
                "frame's tick to the end of the last frame. Any format, host or device frames.",
            .params = {{"fps",
                        ParamType::kString,
                        "",
                        0,
                        0,
                        "the new rate: 25, 29.97, 30000/1001, ntsc, pal, film or ntsc_film",
                        {}},
                       {"round", ParamType::kChoice, "near", 0, 0,
                        "how an input time becomes a tick: near, zero, inf, down or up", roundings},
                       {"eof_action",
                        ParamType::kChoice,
                        "round",
                        0,
                        0,
                        "the end of the last frame: round (as the times are) or pass (rounded "
                        "up: the last frame is always kept)",
                        {"round", "pass"}}},
            .create = [](const ParamValues& p) { return std::make_unique<Fps>(p); },
            .formats = "any (it never reads a pixel)",
            .cuda = true,
            .example = "fps=10"};
  }
  explicit Fps(const ParamValues& p)
      : change_{parse_rate(p.get_string("fps")), rounding_named(p.get_string("round")),
                AV_ROUND_NEAR_INF} {
    change_.end_rounding = p.get_string("eof_action") == "pass" ? AV_ROUND_UP : change_.rounding;
  }
  FrameFormat configure(const FrameFormat& in) override { return in; }
  [[nodiscard]] bool is_identity() const override { return true; }  // for the pixels
  [[nodiscard]] std::optional<RateChange> rate_change() const override { return change_; }
  void process(const Frame&, Frame&) override {
    throw logic_error("fps: its frames go through a RateStage, never process()");
  }

 private:
  RateChange change_;
};

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

FilterInfo fps_filter_info() { return Fps::info(); }
FilterInfo delay_filter_info() { return Delay::info(); }
FilterInfo stamp_filter_info() { return Stamp::info(); }

}  // namespace vpipe
