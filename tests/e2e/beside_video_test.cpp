// What a file holds beside its video is not lost. Text subtitles a container
// cannot hold as they are (SubRip into MP4, MOV or WebM) are converted to its
// own text format, each cue's words, time and length kept; a container with no
// text subtitles (MPEG-TS) drops them with a note; a cut keeps the cues on
// screen at its edges; a cue that does not decode is counted and the others
// arrive. Matroska keeps the fonts they name (attachments). Chapters follow the
// video and its cut; closed captions stay with their pictures. ffprobe, the
// ffmpeg tool and libavcodec, not vpipe, read the outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

struct Cue {
  double start = 0, length = 0;  // seconds
  std::string text;
};

double seconds(const std::string& hh_mm_ss_ms) {  // SubRip's 00:00:01,500
  int h = 0, m = 0, sec = 0, ms = 0;
  if (std::sscanf(hh_mm_ss_ms.c_str(), "%d:%d:%d,%d", &h, &m, &sec, &ms) != 4) return -1;
  return h * 3600.0 + m * 60.0 + sec + ms / 1000.0;
}

// The cues of `path`'s first subtitle stream as the ffmpeg tool reads them out to
// SubRip: the words, and the times from the file's start (the video's: these inputs
// have no audio).
std::vector<Cue> cues(const std::string& path) {
  std::istringstream srt(shell_output("ffmpeg -v error -i '" + path + "' -map 0:s:0 -f srt -"));
  std::vector<Cue> out;
  for (std::string line; std::getline(srt, line);) {
    const auto arrow = line.find(" --> ");
    if (arrow == std::string::npos) continue;
    const double from = seconds(line.substr(0, arrow)), to = seconds(line.substr(arrow + 5));
    std::string words;
    std::getline(srt, words);
    out.push_back({from, to - from, words});
  }
  return out;
}

std::string subtitle_codec(const std::string& path) {
  const std::string line = shell_output(
      "ffprobe -v error -select_streams s:0 -show_entries stream=codec_name -of csv=p=0 '" + path +
      "'");
  return line.substr(0, line.find('\n'));
}

class BesideTheVideo : public ScratchSuite<BesideTheVideo> {
 public:
  static constexpr const char* kName = "beside_video_test";
  static constexpr bool kNeedsFfmpegTool = true;

 protected:
  // 4 s of video at 25 fps with an English SubRip track of `srt`, in Matroska.
  static std::string input(const std::string& name, const std::string& srt) {
    const std::string p = path(name), s = path(name + ".srt");
    std::ofstream(s) << srt;
    const std::string cmd =
        "ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -i '" + s +
        "' -t 4 -map 0 -map 1 -c:v libx264 -c:s copy -metadata:s:s:0 language=eng '" + p + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return p;
  }
  static constexpr const char* kThreeCues =
      "1\n00:00:00,000 --> 00:00:01,500\nHello\n\n"
      "2\n00:00:01,500 --> 00:00:02,000\nW\xc3\xb6rld\n\n"
      "3\n00:00:02,500 --> 00:00:03,500\nThird\n\n";
};

void expect_cues(const std::string& path, const std::vector<Cue>& want) {
  const auto got = cues(path);
  ASSERT_EQ(got.size(), want.size()) << path;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i].start, want[i].start, 0.002) << path << " cue " << i;
    EXPECT_NEAR(got[i].length, want[i].length, 0.002) << path << " cue " << i;
    EXPECT_EQ(got[i].text, want[i].text) << path << " cue " << i;
  }
}

const std::vector<Cue> kAll = {{0, 1.5, "Hello"}, {1.5, 0.5, "W\xc3\xb6rld"}, {2.5, 1, "Third"}};

TEST_F(BesideTheVideo, TextSubtitlesBecomeTheContainersOwnText) {
  const auto in = input("in.mkv", kThreeCues);
  const struct {
    const char* name;
    const char* codec;  // in the output
    bool converted;
  } cases[] = {{"o.mp4", "mov_text", true},
               {"o.mov", "mov_text", true},
               {"o.webm", "webvtt", true},
               {"o.mkv", "subrip", false}};
  for (const auto& c : cases) {
    const auto out = path(c.name);
    const auto r = run_vpipe("transcode " + in + " " + out + " --device cpu --vf resize=160x120");
    ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
    EXPECT_EQ(subtitle_codec(out), c.codec) << c.name;
    const std::string note = std::string("stream #1 (subrip) re-encoded to ") + c.codec;
    EXPECT_EQ(r.err.find(note) != std::string::npos, c.converted) << c.name << ": " << r.err;
    expect_cues(out, kAll);
    EXPECT_NE(shell_output("ffprobe -v error -select_streams s:0 -show_entries "
                           "stream_tags=language -of csv=p=0 '" +
                           out + "'")
                  .find("eng"),
              std::string::npos)
        << c.name << ": the language is kept";
  }
  // And back: MP4's mov_text, which Matroska cannot hold, becomes ASS there.
  const auto r = run_vpipe("transcode " + path("o.mp4") + " " + path("back.mkv") + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stream #1 (mov_text) re-encoded to ass"), std::string::npos) << r.err;
  EXPECT_EQ(subtitle_codec(path("back.mkv")), "ass");
  expect_cues(path("back.mkv"), kAll);
}

TEST_F(BesideTheVideo, AContainerWithoutTextSubtitlesSaysItDropsThem) {
  const auto in = input("in.mkv", kThreeCues);
  const auto r = run_vpipe("transcode " + in + " " + path("o.ts") + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stream #1 (subrip) dropped: mpegts cannot hold it"), std::string::npos)
      << r.err;
  EXPECT_EQ(subtitle_codec(path("o.ts")), "");
}

TEST_F(BesideTheVideo, ACutKeepsTheCuesOnScreenAtItsEdges) {
  const auto in = input("in.mkv", kThreeCues);
  // 1 s to 3 s: Hello is on screen at the start, Third at the end.
  const std::vector<Cue> want = {
      {0, 0.5, "Hello"}, {0.5, 0.5, "W\xc3\xb6rld"}, {1.5, 0.5, "Third"}};
  for (const std::string name : {"cut.mkv", "cut.mp4"}) {
    const auto r = run_vpipe("transcode " + in + " " + path(name) + " --device cpu --ss 1 --to 3");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    expect_cues(path(name), want);
  }
}

TEST_F(BesideTheVideo, ACueThatDoesNotDecodeIsCountedAndTheOthersArrive) {
  // The second cue is not UTF-8: FFmpeg's SubRip decoder refuses it; a copy would not notice.
  const auto in = input("bad.mkv",
                        "1\n00:00:00,000 --> 00:00:01,500\nHello\n\n"
                        "2\n00:00:01,500 --> 00:00:02,000\nW\xf6rld\n\n"
                        "3\n00:00:02,500 --> 00:00:03,500\nThird\n\n");
  const auto report = path("bad.json");
  const auto r =
      run_vpipe("transcode " + in + " " + path("bad.mp4") + " --device cpu --report " + report);
  EXPECT_EQ(r.exit_code, 4) << "completed with errors: " << r.err;
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["frames"]["copied_packets_damaged"], 1) << j.dump();
  EXPECT_EQ(j["status"], "completed with 1 errors") << "as the exit status says";
  expect_cues(path("bad.mp4"), {{0, 1.5, "Hello"}, {2.5, 1, "Third"}});
  // Two outputs that both convert it: still one damaged cue, not one per output.
  const auto ladder = path("ladder.json");
  const auto l = run_vpipe("transcode " + in + " " + path("l.mp4") + " --output " + path("l.mov") +
                           " --device cpu --report " + ladder);
  EXPECT_EQ(l.exit_code, 4) << l.err;
  std::ifstream lf(ladder);
  EXPECT_EQ(nlohmann::json::parse(lf)["frames"]["copied_packets_damaged"], 1);
  expect_cues(path("l.mov"), {{0, 1.5, "Hello"}, {2.5, 1, "Third"}});
}

// Styled subtitles name their fonts, which Matroska carries as attachments: a
// Matroska output keeps each, byte for byte, with its name and type; a container
// without attachments says it leaves them out.
TEST_F(BesideTheVideo, MatroskaKeepsTheFontsTheSubtitlesNeed) {
  const auto s = path("cues.srt"), in = path("fonts.mkv"), font = path("Font.ttf");
  std::ofstream(s) << kThreeCues;
  {  // the bytes of a font file, as far as any container can tell
    std::ofstream f(font, std::ios::binary);
    for (int i = 0; i < 5000; ++i) f.put(static_cast<char>((i * 131 + 7) % 251));
  }
  const std::string make = "cd " + dir().string() +
                           " && ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -i "
                           "cues.srt -t 2 -map 0 -map 1 -c:v libx264 -c:s ass -attach Font.ttf "
                           "-metadata:s:t mimetype=application/x-truetype-font fonts.mkv";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  const auto r = run_vpipe("transcode " + in + " " + path("o.mkv") + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(shell_output("ffprobe -v error -select_streams t -show_entries "
                         "stream=codec_name:stream_tags=filename,mimetype -of csv=p=0 " +
                         path("o.mkv")),
            "ttf,Font.ttf,application/x-truetype-font\n");
  fs::create_directories(dir() / "dump");
  const std::string dump = "cd " + (dir() / "dump").string() +
                           " && ffmpeg -v quiet -dump_attachment:t '' -i " + path("o.mkv") +
                           "; cmp Font.ttf " + font;
  EXPECT_EQ(std::system(dump.c_str()), 0) << "the font, byte for byte: " << dump;
  const auto mp4 = run_vpipe("transcode " + in + " " + path("o.mp4") + " --device cpu");
  ASSERT_EQ(mp4.exit_code, 0) << mp4.err;
  EXPECT_NE(mp4.err.find("(attachment, ttf) not copied: mp4 holds no attachments"),
            std::string::npos)
      << mp4.err;
}

struct Chapter {
  double start, end;
  std::string title;
  bool operator==(const Chapter&) const = default;
};

std::vector<Chapter> chapters(const std::string& path) {
  const auto j = nlohmann::json::parse(
      shell_output("ffprobe -v error -show_chapters -of json '" + path + "'"));
  std::vector<Chapter> out;
  for (const auto& c : j["chapters"])
    out.push_back({std::round(std::stod(c["start_time"].get<std::string>()) * 1000) / 1000,
                   std::round(std::stod(c["end_time"].get<std::string>()) * 1000) / 1000,
                   c.contains("tags") ? c["tags"].value("title", "") : ""});
  return out;
}

// Chapters go with the video, as FFmpeg copies them: every one into the containers
// that hold them, those inside a cut clipped to it and moved with it; MPEG-TS, which
// holds none, says it leaves them out.
TEST_F(BesideTheVideo, ChaptersFollowTheVideoAndItsCut) {
  const auto meta = path("chapters.txt"), in = path("chapters.mkv");
  std::ofstream(meta) << ";FFMETADATA1\n"
                         "[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=Intro\n"
                         "[CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=2500\ntitle=Middle\n"
                         "[CHAPTER]\nTIMEBASE=1/1000\nSTART=2500\nEND=4000\ntitle=End\n";
  const std::string make = "ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -i " +
                           meta + " -map 0 -map_chapters 1 -t 4 -c:v libx264 " + in;
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  const std::vector<Chapter> all = {{0, 1, "Intro"}, {1, 2.5, "Middle"}, {2.5, 4, "End"}};
  ASSERT_EQ(chapters(in), all);
  for (const std::string name : {"c.mkv", "c.mp4", "c.webm"}) {
    const auto r = run_vpipe("transcode " + in + " " + path(name) + " --device cpu");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(chapters(path(name)), all) << name;
  }
  // 1.5 s to 3 s, and frames 30 to 70 (1.2 s to 2.8 s): Middle and End, clipped, from zero.
  const auto r =
      run_vpipe("transcode " + in + " " + path("cut.mp4") + " --device cpu --ss 1.5 --to 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("chapters: 2 of 3 inside the cut"), std::string::npos) << r.err;
  EXPECT_EQ(chapters(path("cut.mp4")), (std::vector<Chapter>{{0, 1, "Middle"}, {1, 1.5, "End"}}));
  const auto f = run_vpipe("transcode " + in + " " + path("frames.mkv") +
                           " --device cpu --ss-frame 30 --to-frame 70");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(chapters(path("frames.mkv")),
            (std::vector<Chapter>{{0, 1.3, "Middle"}, {1.3, 1.6, "End"}}));
  const auto ts = run_vpipe("transcode " + in + " " + path("c.ts") + " --device cpu");
  ASSERT_EQ(ts.exit_code, 0) << ts.err;
  EXPECT_NE(ts.err.find("chapters: 3 left out: mpegts holds none"), std::string::npos) << ts.err;
}

// Closed captions ride in the video stream (H.264 SEI), a side data of each decoded
// picture: through a filter that makes new pictures, a ladder whose outputs share that
// filter, and the segment encoders, every picture keeps its own, as FFmpeg's filters keep
// them; libx264 writes them again.
TEST_F(BesideTheVideo, ClosedCaptionsStayWithTheirPictures) {
  const auto in = path("cc.mkv");
  const auto want = write_captioned_clip(in, 50);
  ASSERT_EQ(captions_in(in), want) << "the input carries them";
  const struct {
    std::string args;
    std::vector<std::string> outputs;
  } runs[] = {
      {"o1.mkv", {"o1.mkv"}},
      {"o2.mkv --vf resize=160x120", {"o2.mkv"}},
      {"o3.mkv --vf resize=160x120 --output " + path("o4.mkv"), {"o3.mkv", "o4.mkv"}},
      {"o5.mkv --vf blur=sigma=1 --encode-segments 2 --gop 10", {"o5.mkv"}},
  };
  for (const auto& run : runs) {
    const auto r = run_vpipe("transcode " + in + " " + path(run.args) + " --device cpu");
    ASSERT_EQ(r.exit_code, 0) << run.args << ": " << r.err;
    for (const auto& o : run.outputs)
      EXPECT_EQ(captions_in(path(o)), want) << run.args << ": " << o;
  }
}

}  // namespace
