// --encoder copy (issue #79 item 4): the video remuxed without decoding. Against the ffmpeg and
// ffprobe tools: every video packet's bytes equal the source's (ffprobe's data hashes), the
// decoded pictures equal, the audio packets equal, the clock starts where a transcode's does
// (the input's start); --audio none leaves the audio out; an option a copy cannot apply is
// refused before anything is written; the input is never written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

class StreamCopy : public ScratchSuite<StreamCopy> {
 public:
  static constexpr const char* kName = "stream_copy_test";
  static constexpr bool kNeedsFfmpegTool = true;

 protected:
  // 3 s of a moving pattern with a tone, made by the ffmpeg tool.
  std::string make(const std::string& name, const std::string& codec) {
    const std::string out = path(name);
    if (!fs::exists(out))
      shell_output(
          fmt::format("ffmpeg -v error -y -f lavfi -i testsrc2=s=320x240:r=25 -f lavfi -i "
                      "sine=frequency=440:sample_rate=48000 -t 3 {} -pix_fmt yuv420p '{}' 2>&1",
                      codec, out));
    return out;
  }
  // One line per packet of `stream` ("v:0", "a:0"), in file order: its data's md5; then one
  // per video packet: its flags (K: keyframe; audio's differ by container: MP4 marks its
  // priming packet discarded).
  static std::string packet_hashes(const std::string& file, const std::string& stream) {
    const std::string probe = fmt::format(
        "ffprobe -v error -select_streams {} -show_data_hash md5 -show_entries ", stream);
    const std::string hashes = shell_output(
        fmt::format("{} packet=data_hash -of csv=p=0 '{}' | grep -o 'MD5:.*'", probe, file));
    if (stream[0] != 'v') return hashes;
    return hashes + shell_output(fmt::format("{} packet=flags -of csv=p=0 '{}' | grep -oE '^[K_]'",
                                             probe, file));
  }
  static std::string picture_hashes(const std::string& file) {
    return shell_output(fmt::format(
        "ffmpeg -v error -i '{}' -map 0:v -f framemd5 - | grep -v '^#' | cut -d, -f6", file));
  }
  static double first_video_time(const std::string& file) {
    return std::stod(shell_output(fmt::format(
        "ffprobe -v error -select_streams v:0 -show_entries packet=pts_time -of csv=p=0 "
        "-read_intervals %+#1 '{}' | head -1",
        file)));
  }
};

struct Case {
  const char* source;
  const char* codec;  // the ffmpeg tool's options for the source
  const char* output;
};

const Case kCases[] = {
    {"h264.mp4", "-c:v libx264 -bf 3 -g 12 -c:a aac", "h264-copy.mkv"},
    {"hevc.mkv", "-c:v libx265 -x265-params log-level=error -c:a libopus", "hevc-copy.mkv"},
    {"mpeg2.ts", "-c:v mpeg2video -q:v 4 -c:a mp2", "mpeg2-copy.mkv"},
    {"h264-b.mkv", "-c:v libx264 -bf 2 -c:a aac", "h264-b-copy.mp4"},
};

}  // namespace

TEST_F(StreamCopy, EveryPacketIsTheSourcesAndTheClockStartsAtTheInputsStart) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.source);
    const std::string in = make(c.source, c.codec), out = path(c.output);
    const std::string before = shell_output("md5sum '" + in + "'");
    const auto r = run_vpipe(fmt::format("transcode '{}' '{}' --encoder copy", in, out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(shell_output("md5sum '" + in + "'"), before) << "the input was written";
    const std::string want = packet_hashes(in, "v:0");
    ASSERT_GT(want.size(), 70u * 40u) << "75 packets expected: " << want;
    EXPECT_EQ(packet_hashes(out, "v:0"), want) << "video packets differ from the source's";
    EXPECT_EQ(picture_hashes(out), picture_hashes(in));
    EXPECT_EQ(packet_hashes(out, "a:0"), packet_hashes(in, "a:0"));
    // A transcode's clock: the input's start is zero (MPEG-TS starts at 1.4 s).
    const auto t = run_vpipe(fmt::format("transcode '{}' '{}' --frames 3", in, path("t.mkv")));
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_NEAR(first_video_time(out), first_video_time(path("t.mkv")), 0.002);
    EXPECT_LT(first_video_time(out), 0.2);
  }
}

TEST_F(StreamCopy, AudioNoneLeavesTheAudioOut) {
  const std::string in = make("h264.mp4", kCases[0].codec), out = path("silent.mkv");
  const auto r = run_vpipe(fmt::format("transcode '{}' '{}' --encoder copy --audio none", in, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(shell_output(fmt::format(
                "ffprobe -v error -show_entries stream=codec_type -of csv=p=0 '{}'", out)),
            "video\n");
  EXPECT_EQ(packet_hashes(out, "v:0"), packet_hashes(in, "v:0"));
}

TEST_F(StreamCopy, WhatACopyCannotApplyIsRefusedBeforeAnythingIsWritten) {
  const std::string in = make("h264.mp4", kCases[0].codec);
  for (const char* extra : {"--vf blur", "--crf 18", "--ss 1", "--to 2", "--frames 10",
                            "--audio encode", "--pix-fmt yuv444p", "--device cuda"}) {
    const std::string out = path("refused.mkv");
    const auto r = run_vpipe(fmt::format("transcode '{}' '{}' --encoder copy {}", in, out, extra));
    EXPECT_EQ(r.exit_code, 2) << extra << ": " << r.err;
    EXPECT_NE(r.err.find("encoder copy"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << extra;
  }
  // Its own input as output: the run's files say no, as for a transcode.
  const auto r = run_vpipe(fmt::format("transcode '{}' '{}' --encoder copy", in, in));
  EXPECT_NE(r.exit_code, 0);
}

// What the input says beside its packets goes across as a transcode takes it (found by a hostile
// pass): rotation, each track's language and default flag, chapters and the title; a codec tag
// the output's container needs (AVI's avc1); "-" is MPEG-TS on the standard output.
TEST_F(StreamCopy, WhatTheInputSaysBesideItsPacketsGoesAcross) {
  const std::string in = path("tagged.mkv");
  shell_output(fmt::format(
      "ffmpeg -v error -y -f lavfi -i testsrc2=s=320x240:r=25 -f lavfi -i sine=sample_rate=48000 "
      "-f lavfi -i sine=frequency=880:sample_rate=48000 -t 4 -map 0 -map 1 -map 2 -c:v libx264 "
      "-c:a aac -metadata:s:a:0 language=eng -metadata:s:a:1 language=fre -disposition:a:0 "
      "default -disposition:a:1 0 '{}' 2>&1",
      in));
  const std::string chapters = path("chapters.txt");
  std::ofstream(chapters) << ";FFMETADATA1\ntitle=MyTitle\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\n"
                             "END=2000\ntitle=One\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=2000\n"
                             "END=4000\ntitle=Two\n";
  const std::string src = path("chaptered.mkv"), rotated = path("rotated.mp4");
  shell_output(
      fmt::format("ffmpeg -v error -y -i '{}' -i '{}' -map 0 -map_metadata 1 "
                  "-map_chapters 1 -c copy '{}' 2>&1",
                  in, chapters, src));
  shell_output(
      fmt::format("ffmpeg -v error -y -i '{}' -map 0:v -c copy -metadata:s:v:0 rotate=90 '{}' 2>&1",
                  in, rotated));
  const auto probe = [](const std::string& what, const std::string& file) {
    return shell_output(fmt::format("ffprobe -v error {} -of csv=p=0 '{}'", what, file));
  };
  const std::string tracks =
      "-select_streams a -show_entries stream_tags=language:stream_disposition=default";
  const std::string out = path("tagged-copy.mkv");
  ASSERT_EQ(run_vpipe(fmt::format("transcode '{}' '{}' --encoder copy", src, out)).exit_code, 0);
  EXPECT_EQ(probe(tracks, out), probe(tracks, src));
  EXPECT_NE(probe(tracks, src).find("eng"), std::string::npos) << "the source as made";
  EXPECT_EQ(probe("-show_chapters", out), probe("-show_chapters", src));
  EXPECT_NE(probe("-show_chapters", src).find("Two"), std::string::npos) << "the source as made";
  EXPECT_NE(probe("-show_entries format_tags=title", out).find("MyTitle"), std::string::npos);
  const std::string turned = path("rotated-copy.mp4");
  ASSERT_EQ(run_vpipe(fmt::format("transcode '{}' '{}' --encoder copy", rotated, turned)).exit_code,
            0);
  const std::string rotation = "-show_entries stream_side_data=rotation";
  EXPECT_EQ(probe(rotation, turned), probe(rotation, rotated));
  EXPECT_NE(probe(rotation, rotated).find("90"), std::string::npos) << "the source as made";
  const std::string avi = path("tagged.avi");  // from MP4: avc1 kept, which AVI needs
  ASSERT_EQ(run_vpipe(fmt::format("transcode '{}' '{}' --encoder copy", rotated, avi)).exit_code,
            0);
  EXPECT_EQ(probe("-select_streams v -show_entries stream=codec_name", avi), "h264\n");
  const std::string ts = path("stdout.ts");
  const auto piped = run_vpipe(fmt::format("transcode '{}' - --encoder copy", in));
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  std::ofstream(ts, std::ios::binary) << piped.out;  // the standard output, as it came
  EXPECT_EQ(probe("-show_entries format=format_name", ts), "mpegts\n");
}
