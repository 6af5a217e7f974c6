// 10-bit HDR10 input (issue #43, item 3, the CPU path): the pictures stay 10-bit
// to a 10-bit encoder, and the colour tags and the HDR10 static metadata
// (mastering display, content light level) reach the output, as ffprobe reads
// them: in the bitstream (libx265's SEI) and in the container (MP4, MKV).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "media_check.hpp"
#include "vpipe/pipeline/io/hdr.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

// What x265 was told when the input was made, and what vpipe must say again.
constexpr const char* kMasterDisplay =
    "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)";
constexpr const char* kMaxCll = "max-cll=1000,400";

class Hdr10Input : public ::testing::Test {
 protected:
  // One folder per process: CTest runs each test as its own process, two at once.
  static fs::path dir() {
    return fs::temp_directory_path() / ("vpipe_hdr_test_" + std::to_string(::getpid()));
  }
  static std::string src(const std::string& name) { return (dir() / name).string(); }
  static void TearDownTestSuite() { fs::remove_all(dir()); }
  static void SetUpTestSuite() {
    if (!have_ffmpeg_tool()) return;
    fs::create_directories(dir());
    const std::string cmd =
        std::string("ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -t 1 ") +
        "-pix_fmt yuv420p10le -c:v libx265 -x265-params 'log-level=error:hdr10=1:" +
        kMasterDisplay + ":" + kMaxCll +
        "' -color_primaries bt2020 -color_trc smpte2084 -colorspace bt2020nc " + src("hdr.mp4");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  void SetUp() override { VPIPE_NEED_FFMPEG_TOOL(); }
  // ffprobe's words for the first frame and the stream (side data included).
  static std::string probe(const std::string& path) {
    return shell_output(
        "ffprobe -v error -select_streams v -show_streams -show_frames -read_intervals "
        "%+#1 " +
        path);
  }
  static std::string hashes(const std::string& path) {
    return shell_output(
        "ffmpeg -v error -i " + path +
        " -map 0:v -pix_fmt yuv420p10le -f framemd5 - | grep -v '^#' | awk -F, '{print $6}'");
  }
};

void expect_hdr10(const std::string& p, const std::string& what) {
  for (const char* s :
       {"pix_fmt=yuv420p10le", "color_primaries=bt2020", "color_transfer=smpte2084",
        "color_space=bt2020nc", "side_data_type=Mastering display metadata", "red_x=34000/50000",
        "green_y=34500/50000", "white_point_x=15635/50000", "max_luminance=10000000/10000",
        "min_luminance=1/10000", "side_data_type=Content light level metadata", "max_content=1000",
        "max_average=400"})
    EXPECT_NE(p.find(s), std::string::npos) << what << ": no " << s;
}

TEST(Hdr10Params, AreX265sOwnWords) {
  vpipe::Hdr10 h;
  AVMasteringDisplayMetadata m{};
  m.display_primaries[0][0] = {34000, 50000};  // red
  m.display_primaries[0][1] = {16000, 50000};
  m.display_primaries[1][0] = {13250, 50000};  // green
  m.display_primaries[1][1] = {34500, 50000};
  m.display_primaries[2][0] = {7500, 50000};  // blue
  m.display_primaries[2][1] = {3000, 50000};
  m.white_point[0] = {15635, 50000};
  m.white_point[1] = {16450, 50000};
  m.max_luminance = {10000000, 10000};
  m.min_luminance = {1, 10000};
  m.has_primaries = m.has_luminance = 1;
  h.mastering = m;
  h.light = AVContentLightMetadata{1000, 400};
  EXPECT_EQ(vpipe::x265_hdr10_params(h), std::string(kMasterDisplay) + ":" + kMaxCll);
  EXPECT_EQ(vpipe::x265_hdr10_params({}), "");
}

TEST_F(Hdr10Input, StaysTenBitWithItsTagsAndMetadataThroughLibx265) {
  const auto out = src("out.mkv");
  const auto r =
      run_vpipe("transcode " + src("hdr.mp4") + " " + out +
                " --device cpu --encoder libx265 --encoder-option x265-params=lossless=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("HDR10 metadata carried"), std::string::npos) << r.err;
  expect_hdr10(probe(out), "libx265 → MKV");
  // Lossless: the 10-bit pictures themselves, not 8 bits widened again.
  EXPECT_EQ(hashes(out), hashes(src("hdr.mp4")));
}

// HEVC in MPEG-TS carries the metadata in the first frame's SEI alone (a stream without it in
// its parameters: before FirstFrame read pipes, the output had none). A pipe gives one pass:
// the packets read for that frame are sent on first, so the metadata and every frame arrive.
TEST_F(Hdr10Input, APipeCarriesItsFirstFramesMetadataAndEveryFrame) {
  const auto ts = src("hdr.ts"), fifo = src("hdr.fifo"), out = src("piped.mkv");
  ASSERT_EQ(std::system(("ffmpeg -v error -y -i " + src("hdr.mp4") + " -c copy " + ts).c_str()), 0);
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto r = run_vpipe("transcode " + fifo + " " + out + " --device cpu --encoder libx265",
                           "cat " + ts + " > " + fifo + " &");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("HDR10 metadata carried"), std::string::npos) << r.err;
  expect_hdr10(probe(out), "piped MPEG-TS → libx265 → MKV");
  EXPECT_EQ(for_each_frame(out, [](const vpipe::Frame&) {}), 25);
}

TEST_F(Hdr10Input, Libx264High10IntoMp4KeepsItInTheContainer) {
  const auto out = src("out.mp4");
  const auto r = run_vpipe("transcode " + src("hdr.mp4") + " " + out +
                           " --device cpu --encoder libx264 --pix-fmt yuv420p10le");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto p = probe(out);
  EXPECT_NE(p.find("profile=High 10"), std::string::npos) << p;
  expect_hdr10(p, "libx264 → MP4 (mdcv/clli)");
}

// 8 bits of a 10-bit input, asked for with --pix-fmt yuv420p, against FFmpeg's own (-pix_fmt
// yuv420p: swscale's dither), frame by frame: within 1 LSB. Without filters vpipe converts
// with swscale too; with a filter the chain narrows first (to_8bit, rounded).
int max_diff_from_ffmpeg(const std::string& a, const std::string& b) {
  std::vector<vpipe::Frame> first;
  for_each_frame(a, [&](const vpipe::Frame& f) { first.push_back(f); });
  int worst = 0, n = 0;
  for_each_frame(b, [&](const vpipe::Frame& f) {
    if (n < static_cast<int>(first.size())) worst = std::max(worst, max_abs_diff(first[n], f));
    ++n;
  });
  EXPECT_EQ(n, static_cast<int>(first.size())) << a << " vs " << b;
  EXPECT_GT(n, 0);
  return worst;
}

TEST_F(Hdr10Input, EightBitsAskedForAreFfmpegsWithinOneLsb) {
  for (const auto& [vf, ffmpeg_vf] : std::vector<std::pair<std::string, std::string>>{
           {"", ""}, {" --vf flip=dir=h", " -vf format=yuv420p,hflip"}}) {
    const auto out = src("eight.mkv"), want = src("eight-ffmpeg.mkv");
    const auto r = run_vpipe("transcode " + src("hdr.mp4") + " " + out +
                             " --device cpu --encoder ffv1 --pix-fmt yuv420p" + vf);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string cmd = "ffmpeg -v error -y -i " + src("hdr.mp4") + ffmpeg_vf +
                            " -pix_fmt yuv420p -c:v ffv1 " + want;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    EXPECT_NE(probe(out).find("pix_fmt=yuv420p\n"), std::string::npos);
    EXPECT_LE(max_diff_from_ffmpeg(out, want), 1) << "vf:" << vf;
  }
}

// A filter chain would narrow the 10-bit input while the encoder keeps 10 bits: refused, with
// the way to either, until the filters have 16-bit kernels.
TEST_F(Hdr10Input, FiltersThatWouldNarrowItAreRefusedUnlessEightBitsIsAsked) {
  const auto r = run_vpipe("transcode " + src("hdr.mp4") + " " + src("refused.mkv") +
                           " --device cpu --encoder libx265 --vf flip");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("10-bit input"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pix_fmt yuv420p"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(src("refused.mkv")));
}

}  // namespace
