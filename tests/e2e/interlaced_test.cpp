// Interlaced video (broadcast 1080i and 576i, DV, DVD: two fields of alternate rows,
// captured apart) keeps its fields through a transcode, coded as fields, unless the
// chain deinterlaces it; then the output is progressive and its rows are one field's,
// the comb gone, in every way out (segment encoders, MPEG-2, one output of several).
// A filter that mixes rows before any deinterlace is named in a note.
// libavcodec, not vpipe, writes the input and reads the outputs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "media_check.hpp"
#include "vpipe/pipeline/io/protocols.hpp"

using namespace vpipe;
using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

class Interlaced : public ScratchSuite<Interlaced> {
 public:
  static constexpr const char* kName = "interlaced_test";
  static constexpr bool kNeedsFfmpegTool = false;

 protected:
  static std::string input() {
    const std::string p = path("in.mkv");
    if (!fs::exists(p)) write_interlaced_clip(p);
    return p;
  }
};

// The notes of a run's report.
std::string notes(const std::string& report) {
  std::ifstream f(report);
  return nlohmann::json::parse(f)["notes"].dump();
}

AVFieldOrder stream_field_order(const std::string& file) {
  auto ctx = open_input(file);
  const int v = av_find_best_stream(ctx.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  return ctx->streams[v]->codecpar->field_order;
}

TEST_F(Interlaced, TheFieldsAreKeptAndCodedAsFields) {
  const auto in = input();
  ASSERT_EQ(field_stats(in).top_first, 25) << "the input is interlaced";
  const auto r = run_vpipe("transcode " + in + " " + path("kept.mkv") + " --device cpu --report " +
                           path("kept.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = field_stats(path("kept.mkv"));
  EXPECT_EQ(out.count, 25);
  EXPECT_EQ(out.top_first, 25) << "every picture coded as two fields, top first";
  EXPECT_GT(out.comb, 120) << "the two fields are the input's (60 and 200), not mixed";
  EXPECT_NE(stream_field_order(path("kept.mkv")), AV_FIELD_PROGRESSIVE);
  EXPECT_NE(stream_field_order(path("kept.mkv")), AV_FIELD_UNKNOWN);
  EXPECT_NE(notes(path("kept.json")).find("kept interlaced, libx264 codes its fields"),
            std::string::npos)
      << notes(path("kept.json"));
}

TEST_F(Interlaced, DeinterlaceMakesThePicturesProgressiveAndTheCombGoes) {
  const auto in = input();
  for (const std::string vf : {"deinterlace", "deinterlace,resize=160x120"}) {
    const auto out_file = path("d.mkv"), report = path("d.json");
    const auto r = run_vpipe("transcode " + in + " " + out_file + " --device cpu --vf " + vf +
                             " --report " + report);
    ASSERT_EQ(r.exit_code, 0) << vf << ": " << r.err;
    const auto out = field_stats(out_file);
    EXPECT_EQ(out.count, 25) << vf;
    EXPECT_EQ(out.progressive, 25) << vf;
    EXPECT_LT(out.comb, 6) << vf << ": the rows are one field's";
    EXPECT_NEAR(out.luma, 60, 6) << vf << ": the top field's, captured first";
    EXPECT_EQ(stream_field_order(out_file), AV_FIELD_PROGRESSIVE) << vf;
    EXPECT_NE(notes(report).find("deinterlaced, the output is progressive"), std::string::npos)
        << vf << ": " << notes(report);
  }
}

TEST_F(Interlaced, AFilterThatMixesTheFieldsIsNamed) {
  const auto in = input();
  const auto r = run_vpipe("transcode " + in + " " + path("mixed.mkv") +
                           " --device cpu --vf resize=160x120 --report " + path("mixed.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(notes(path("mixed.json")).find("resize=160x120 mixes the two fields"),
            std::string::npos)
      << notes(path("mixed.json"));
  // The way back from RGB averages 2x2 blocks, a row of each field, for its chroma; a crop
  // by 2 rows puts each field's chroma rows beside the other's luma.
  for (const std::string vf : {"format=rgb24,invert,format=yuv420p", "crop=w=320:h=200:y=2"}) {
    const auto r2 = run_vpipe("transcode " + in + " " + path("m2.mkv") + " --device cpu --vf " +
                              vf + " --report " + path("m2.json"));
    ASSERT_EQ(r2.exit_code, 0) << vf << ": " << r2.err;
    const std::string named = vf[0] == 'f' ? "format=yuv420p (rgb_to_yuv)" : vf;
    EXPECT_NE(notes(path("m2.json")).find(named + " mixes"), std::string::npos)
        << vf << ": " << notes(path("m2.json"));
  }
  // A progressive input says nothing of fields.
  write_yuv420p_clip(path("p.mkv"), "libx264", 64, 48, 5, [](int, int, int, int) { return 90; });
  const auto p = run_vpipe("transcode " + path("p.mkv") + " " + path("p-out.mkv") +
                           " --device cpu --vf resize=32x24 --report " + path("p.json"));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(notes(path("p.json")).find("interlaced"), std::string::npos) << notes(path("p.json"));
  EXPECT_EQ(field_stats(path("p-out.mkv")).progressive, 5);
}

// A filter that reads no other row keeps the fields apart, and is not named: point
// operations, drawing, a crop by whole field rows, a flip left to right.
TEST_F(Interlaced, AFilterThatKeepsEachRowsSamplesIsNotNamed) {
  const auto in = input();
  const std::string vf =
      "invert,eq=contrast=1.1,grayscale,stamp,crop=w=320:h=200:y=20,flip=dir=h,pad=w=320:h=240:"
      "y=4:color=black";
  const auto r = run_vpipe("transcode " + in + " " + path("kept2.mkv") + " --device cpu --vf " +
                           vf + " --report " + path("kept2.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string n = notes(path("kept2.json"));
  EXPECT_NE(n.find("kept interlaced"), std::string::npos) << n;
  EXPECT_EQ(n.find("mixes"), std::string::npos) << n;
  const auto s = field_stats(path("kept2.mkv"));
  EXPECT_EQ(s.top_first, 25);
  EXPECT_GT(s.comb, 100) << "the fields, inverted, stay apart";
}

// Upside down, an even height's rows change field: the field captured first (the input's
// top, luma 60) is now the bottom one. The pictures are marked bottom first, so the
// encoder codes them so and a deinterlace after the flip keeps that field.
TEST_F(Interlaced, UpsideDownTheOtherFieldIsFirst) {
  const auto in = input();
  const auto r = run_vpipe("transcode " + in + " " + path("v.mkv") +
                           " --device cpu --vf flip=dir=v --report " + path("v.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = field_stats(path("v.mkv"));
  EXPECT_EQ(s.bottom_first, 25) << "top first " << s.top_first;
  EXPECT_GT(s.comb, 120);
  const std::string n = notes(path("v.json"));
  EXPECT_NE(n.find("after flip=dir=v the bottom field is first"), std::string::npos) << n;
  EXPECT_EQ(n.find("mixes"), std::string::npos) << n;
  const auto d = run_vpipe("transcode " + in + " " + path("vd.mkv") +
                           " --device cpu --vf flip=dir=v,deinterlace");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto ds = field_stats(path("vd.mkv"));
  EXPECT_EQ(ds.progressive, 25);
  EXPECT_NEAR(ds.luma, 60, 6) << "the field captured first, now the bottom rows";
}

// A crop by an odd number of rows of 4:2:2 (every chroma row) moves each row, chroma too,
// into the other field: the field captured first is now the bottom one.
TEST_F(Interlaced, ACropByAnOddRowPutsTheOtherFieldFirst) {
  write_interlaced_clip(path("422.mkv"), AV_PIX_FMT_YUV422P, 10);
  const auto r = run_vpipe("transcode " + path("422.mkv") + " " + path("c.mkv") +
                           " --device cpu --vf crop=w=320:h=200:y=1 --report " + path("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = field_stats(path("c.mkv"));
  EXPECT_EQ(s.bottom_first, 10) << "top first " << s.top_first;
  const std::string n = notes(path("c.json"));
  EXPECT_NE(n.find("after crop=w=320:h=200:y=1 the bottom field is first"), std::string::npos) << n;
  EXPECT_EQ(n.find("mixes"), std::string::npos) << n;
}

// Each way out keeps the fields: encoders on segments at once (each opened with the
// output's field order), MPEG-2 (which codes fields too), and one output of two, the
// other deinterlaced by its own chain.
TEST_F(Interlaced, EveryWayOutKeepsTheFieldsUnlessItsOwnChainDeinterlaces) {
  const auto in = input();
  const struct {
    std::string args;
    std::string out;
    bool kept;
  } runs[] = {
      {"seg.mkv --encode-segments 2 --gop 10", "seg.mkv", true},
      {"m2.ts --encoder mpeg2video", "m2.ts", true},
      {"a.mkv --output " + path("b.mkv") + ":vf=deinterlace", "a.mkv", true},
      {"a.mkv --output " + path("b.mkv") + ":vf=deinterlace", "b.mkv", false},
  };
  for (const auto& run : runs) {
    const auto r = run_vpipe("transcode " + in + " " + path(run.args) + " --device cpu");
    ASSERT_EQ(r.exit_code, 0) << run.args << ": " << r.err;
    const auto s = field_stats(path(run.out));
    EXPECT_EQ(s.count, 25) << run.args << ": " << run.out;
    EXPECT_EQ(run.kept ? s.top_first : s.progressive, 25) << run.args << ": " << run.out;
    if (run.kept)
      EXPECT_GT(s.comb, 120) << run.args << ": " << run.out;
    else
      EXPECT_LT(s.comb, 6) << run.args << ": " << run.out;
  }
}

// DV in AVI or raw, or DV, ProRes, DNxHD or MJPEG in a file that does not store the field
// order: the stream's parameters say nothing of fields, its frames do. The first frame
// decides, as the first frame does for FFmpeg's own tool; either parity is kept.
TEST_F(Interlaced, AStreamThatSaysNothingOfItsFieldsIsToldByItsFrames) {
  for (const bool top : {true, false}) {
    const auto in = path(top ? "tff-dv.mkv" : "bff-dv.mkv"), out = path("dv-out.mkv");
    write_yuv420p_clip(
        in, "dvvideo", 720, 576, 10,
        [](int, int plane, int, int y) { return plane   ? 128
                                                : y % 2 ? 200
                                                        : 60; },
        AV_PIX_FMT_YUV420P,
        [top](AVFrame* f, int) {
          set_field_order(top ? FieldOrder::kTopFirst : FieldOrder::kBottomFirst, *f);
        });
    ASSERT_EQ(stream_field_order(in), AV_FIELD_UNKNOWN) << "the case: the stream says nothing";
    const auto src = field_stats(in);
    ASSERT_EQ(src.progressive, 0) << "DV's frames are interlaced";
    ASSERT_EQ(src.top_first, top ? 10 : 0);
    // A file is read again for its first frame; a pipe (a capture: dvgrab | vpipe) gives one
    // pass, and the packets read for it are sent on first: every frame, the same fields.
    const auto fifo = path("dv.fifo");
    fs::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    for (const bool piped : {false, true}) {
      const auto r = run_vpipe("transcode " + (piped ? fifo : in) + " " + out +
                                   " --device cpu --report " + path("dv.json"),
                               piped ? "cat " + in + " > " + fifo + " &" : "");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const auto s = field_stats(out);
      EXPECT_EQ(s.count, 10) << "piped: " << piped;
      EXPECT_EQ(s.progressive, 0) << (top ? "tff" : "bff") << ", piped " << piped << ": as fields";
      EXPECT_EQ(s.top_first, top ? 10 : 0) << "piped: " << piped;
      EXPECT_GT(s.comb, src.comb * 0.8) << "the fields are not mixed";
      EXPECT_EQ(stream_field_order(out), top ? AV_FIELD_TT : AV_FIELD_BB) << "piped: " << piped;
      EXPECT_NE(notes(path("dv.json"))
                    .find(top ? "interlaced (top field first)" : "interlaced (bottom field first)"),
                std::string::npos)
          << notes(path("dv.json"));
    }
  }
}

// A conversion that changes the chroma's height (4:2:2 or 4:1:1 to 4:2:0: ProRes, DNxHD,
// broadcast MPEG-2, NTSC DV into libx264's 4:2:0) takes each field apart, as FFmpeg's
// scale=interl=1 does: else each chroma row averages the two fields', and one field's
// colour bleeds into the other's.
TEST_F(Interlaced, AChromaConversionKeepsEachFieldsColour) {
  const auto in = path("422.mkv"), out = path("420.mkv");
  write_yuv420p_clip(
      in, "libx264", 320, 240, 10,
      [](int, int plane, int, int y) { return plane ? y % 2 ? 200 : 60 : 128; }, AV_PIX_FMT_YUV422P,
      [](AVFrame* f, int) { set_field_order(FieldOrder::kTopFirst, *f); },
      [](AVCodecContext* enc) {
        enc->flags |= AV_CODEC_FLAG_INTERLACED_DCT | AV_CODEC_FLAG_INTERLACED_ME;
        enc->field_order = AV_FIELD_TT;
      });
  const auto src = field_stats(in);
  ASSERT_EQ(src.top_first, 10);
  ASSERT_GT(src.chroma_comb, 100) << "each field has its own colour";
  const auto r = run_vpipe("transcode " + in + " " + out +
                           " --device cpu --vf format=yuv420p --report " + path("420.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = field_stats(out);
  EXPECT_EQ(s.count, 10);
  EXPECT_EQ(s.top_first, 10);
  EXPECT_GT(s.chroma_comb, src.chroma_comb * 0.8) << "each chroma row is one field's";
  EXPECT_EQ(notes(path("420.json")).find("mixes"), std::string::npos) << notes(path("420.json"));
}

// A height that does not split into two fields of whole 4:2:0 chroma rows (242 = 2 × 121)
// cannot be coded as fields: libx264 refuses it. The output is still made, each picture
// coded as one, the field order a tag, and the note says so.
TEST_F(Interlaced, AHeightThatDoesNotSplitIntoFieldsIsCodedAsPictures) {
  const auto in = path("242.mkv"), out = path("242-out.mkv");
  write_yuv420p_clip(
      in, "libx264", 320, 242, 10, [](int, int plane, int, int y) { return plane ? 128 : y; },
      AV_PIX_FMT_YUV420P, {}, [](AVCodecContext* enc) { enc->field_order = AV_FIELD_TT; });
  ASSERT_EQ(stream_field_order(in), AV_FIELD_TT) << "the container says interlaced";
  const auto r =
      run_vpipe("transcode " + in + " " + out + " --device cpu --report " + path("242.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(field_stats(out).count, 10);
  EXPECT_EQ(stream_field_order(out), AV_FIELD_TT) << "the tag is kept";
  EXPECT_NE(notes(path("242.json")).find("libx264 codes each picture as one"), std::string::npos)
      << notes(path("242.json"));
}

}  // namespace
