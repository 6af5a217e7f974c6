// Issue #26: the GPU path agrees with the CPU path on every size. Every CUDA
// filter, the fused NV12 → RGB pass and the way back, on sizes whose
// heights are not multiples of 16 (where a misregistration hides), with
// NVDEC and CPU decode and every memory strategy, each frame compared with
// `--device cpu` on the same chain (both lossless ffv1).
//
// Pass rule: every frame ≥ 48 dB, and max |diff| no more than the filter's
// stated bound (kChains). The table of cases, worst PSNR and worst |diff| is
// written to $VPIPE_SWEEP_REPORT (JSON) for docs/results and RESULTS.
//
// A subset, for the sanitizers (issue #26: memcheck and racecheck over the odd
// sizes): VPIPE_SWEEP_SIZES=2x2,1281x721, VPIPE_SWEEP_CHAINS=box,eq, VPIPE_SWEEP_DECODE=cpu,
// VPIPE_SWEEP_MEM=pool,vmm select cases, and VPIPE_SWEEP_WRAP runs every GPU
// transcode under a tool ("compute-sanitizer --tool memcheck --error-exitcode 86":
// a finding is an exit code the test does not accept).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "../e2e/media_check.hpp"
#include "vpipe/memory/strategy.hpp"

using namespace vpipe;
using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

struct Chain {
  const char* name;
  const char* vf;   // {w2}x{h2}: half the size, even
  int max_diff;     // the kernels' measured accuracy against the CPU path
  bool nvdec_only;  // the fused pass takes NV12 (NVDEC's frames)
};
const Chain kChains[] = {
    {"pointwise", "flip,invert,grayscale", 0, false},
    {"blur", "blur=sigma=1.5", 2, false},
    {"resize", "resize={w2}x{h2}", 2, false},
    {"fused-rgb-and-back", "resize={w2}x{h2},format=rgb24,invert,format=yuv420p", 2, false},
    {"crop", "crop=w={w2}:h={h2}:x={x}:y={y}", 0, false},
    {"box", "box=radius=2", 1, false},
    {"unsharp", "unsharp=sigma=1.5:amount=0.8", 1, false},
    {"sobel", "sobel", 1, false},
    {"eq", "eq=brightness=0.1:contrast=1.2:gamma=0.9", 0, false},
    {"pad", "pad=w={wp}:h={hp}:x=8:y=4:color=black", 0, false},
    {"pad-edge", "pad=w={wp}:h={hp}", 0, false},
    {"overlay", "format=rgba,overlay=file={png}:x=8:y=4:opacity=0.7,format=yuv420p", 2, false},
};
const std::pair<int, int> kSizes[] = {{2, 2},       {720, 405},   {720, 404},  {1281, 721},
                                      {1920, 1080}, {1920, 1088}, {3840, 2160}};
constexpr int kFrames = 4;

// Whether `item` is in the comma-separated list in environment variable `name`
// (every item is, when it is unset or empty).
bool selected(const char* name, const std::string& item) {
  const std::string list = env_or(name, "");
  if (list.empty()) return true;
  return ("," + list + ",").find("," + item + ",") != std::string::npos;
}

// A clip of kFrames frames with detail (a moving gradient and a checker):
// H.264 where the size allows it (NVDEC can take it), else ffv1.
std::string write_clip(const std::string& path, int w, int h) {
  const bool h264 = w % 2 == 0 && h % 2 == 0 && w >= 16 && h >= 16;
  write_yuv420p_clip(
      path, h264 ? "libx264" : "ffv1", w, h, kFrames, [](int i, int p, int x, int y) {
        return p == 0 ? (x * 3 + y * 2 + 7 * i) % 200 + (((x / 8) + (y / 8)) % 2) * 40
                      : 90 + (x + 2 * y + p * 31 + i) % 80;
      });
  return h264 ? "h264" : "ffv1";
}

class Sweep : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = cuda_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
    dir_ = fs::temp_directory_path() / ("vpipe_sweep_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
};

}  // namespace

TEST_F(Sweep, TheGpuPathMatchesTheCpuPathOnEverySizeDecoderAndStrategy) {
  nlohmann::json cases = nlohmann::json::array();
  const std::string wrap = env_or("VPIPE_SWEEP_WRAP", "");
  for (const auto& [w, h] : kSizes) {
    if (!selected("VPIPE_SWEEP_SIZES", fmt::format("{}x{}", w, h))) continue;
    const std::string clip = path(fmt::format("in-{}x{}.mkv", w, h));
    const std::string codec = write_clip(clip, w, h);
    for (const auto& chain : kChains) {
      if (!selected("VPIPE_SWEEP_CHAINS", chain.name)) continue;
      std::string vf = expand_sweep_vf(chain.vf, w, h);
      if (const auto at = vf.find("{png}"); at != std::string::npos) {
        const std::string png = path("mark.png");
        if (!fs::exists(png))
          write_rgba_png(png, 40, 24, [](int x, int y) {
            return std::array<int, 4>{250 - 5 * x, 9 * y, 120, (x * 37 + y * 11) % 256};
          });
        vf.replace(at, 5, png);
      }
      const std::string common = " --encoder ffv1 --vf \"" + vf + "\"";
      const std::string cpu_out = path("cpu.mkv");
      const auto cpu = run_vpipe("transcode " + clip + " " + cpu_out + " --device cpu" + common);
      ASSERT_EQ(cpu.exit_code, 0) << w << "x" << h << " " << vf << ": " << cpu.err;
      std::vector<Frame> want;
      for_each_frame(cpu_out, [&](const Frame& f) { want.push_back(f); });
      ASSERT_EQ(want.size(), static_cast<std::size_t>(kFrames));
      for (const std::string decode : {"nvdec", "cpu"}) {
        if ((chain.nvdec_only && decode == "cpu") || !selected("VPIPE_SWEEP_DECODE", decode))
          continue;
        for (const auto& mem : strategy_names()) {
          if (!selected("VPIPE_SWEEP_MEM", mem)) continue;
          SCOPED_TRACE(
              fmt::format("{}x{} {} {} --decode {} --mem {}", w, h, codec, vf, decode, mem));
          nlohmann::json c = {{"width", w},     {"height", h},
                              {"codec", codec}, {"chain", chain.name},
                              {"vf", vf},       {"decode", decode},
                              {"mem", mem},     {"max_diff_allowed", chain.max_diff}};
          if (!wrap.empty()) c["under"] = wrap;
          const std::string out = path("gpu.mkv");
          fs::remove(out);
          const auto r = run_vpipe("transcode " + clip + " " + out + " --device cuda --decode " +
                                       decode + " --mem " + mem + common,
                                   wrap);
          if (r.exit_code != 0) {
            // NVDEC refusing a size or format it cannot take is a clear
            // refusal, not a wrong picture: recorded, never silently wrong.
            EXPECT_EQ(decode, "nvdec") << r.err;
            EXPECT_EQ(r.exit_code, 1) << r.err;
            EXPECT_FALSE(fs::exists(out));
            c["outcome"] = "refused";
            c["message"] = r.err.substr(0, r.err.find('\n'));
            cases.push_back(c);
            continue;
          }
          std::vector<Frame> got;
          for_each_frame(out, [&](const Frame& f) { got.push_back(f); });
          ASSERT_EQ(got.size(), want.size());
          double worst_psnr = INFINITY;
          int worst_diff = 0;
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i].format, want[i].format);
            worst_psnr = std::min(worst_psnr, frame_psnr(got[i], want[i]));
            worst_diff = std::max(worst_diff, max_abs_diff(got[i], want[i]));
          }
          EXPECT_GE(worst_psnr, 48.0);
          EXPECT_LE(worst_diff, chain.max_diff);
          c["outcome"] = worst_psnr >= 48.0 && worst_diff <= chain.max_diff ? "pass" : "FAIL";
          c["worst_psnr_db"] =
              std::isinf(worst_psnr) ? nlohmann::json("inf") : nlohmann::json(worst_psnr);
          c["worst_abs_diff"] = worst_diff;
          cases.push_back(c);
        }
      }
    }
  }
  EXPECT_FALSE(cases.empty()) << "the VPIPE_SWEEP_* selection left no case to run";
  if (const char* report = std::getenv("VPIPE_SWEEP_REPORT"))
    std::ofstream(report) << cases.dump(1) << '\n';
}
