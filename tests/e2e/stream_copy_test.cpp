// --encoder copy (issue #79 item 4): the video remuxed without decoding. Against the ffmpeg and
// ffprobe tools: every video packet's bytes equal the source's (ffprobe's data hashes), the
// decoded pictures equal, the audio packets equal, the clock starts where a transcode's does
// (the input's start); --audio none leaves the audio out; an option a copy cannot apply is
// refused before anything is written; the input is never written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

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

// --encoder copy --smart-cut (issue #79 item 4), against the ffmpeg tools: cuts drawn at random
// over a clip of 8 GOPs with B-frames keep exactly the frames `trim` keeps, on the same clock;
// the frames of the copied GOPs decode to the source's pictures and their packets are the
// source's bytes; the re-encoded edges are close to them; the audio spans the cut; the input
// is not written, and what a smart cut cannot take is refused before anything is written.
class SmartCut : public StreamCopy {
 protected:
  // 8 s at 25 fps, a GOP a second (closed: IDR keyframes), 3 B-frames, a tone.
  std::string clip() {
    const std::string out = path("smart-source.mp4");
    if (!fs::exists(out))
      shell_output(
          fmt::format("ffmpeg -v error -y -f lavfi -i testsrc2=s=320x240:r=25 -f lavfi -i "
                      "sine=frequency=440:sample_rate=48000 -t 8 -c:v libx264 -g 25 -bf 3 -c:a aac "
                      "-pix_fmt yuv420p '{}' 2>&1",
                      out));
    return out;
  }
  static std::vector<double> video_times(const std::string& file) {
    std::vector<double> t;
    std::istringstream in(shell_output(fmt::format(
        "ffprobe -v error -select_streams v -show_entries packet=pts_time -of csv=p=0 '{}'",
        file)));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) t.push_back(std::stod(line));
    std::sort(t.begin(), t.end());
    return t;
  }
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
};

TEST_F(SmartCut, RandomCutsKeepTrimsFramesAndCopyTheSourcesBytes) {
  // MP4, and Matroska, whose demuxer guesses the first decode times after a seek (none).
  const std::string mp4 = clip(), mkv = path("smart-source.mkv");
  shell_output(fmt::format("ffmpeg -v error -y -i '{}' -c copy '{}' 2>&1", mp4, mkv));
  std::mt19937 rng(4);
  int copied_total = 0;
  for (int trial = 0; trial < 8; ++trial) {
    const std::string in = trial % 2 ? mkv : mp4;
    const std::string before = shell_output("md5sum '" + in + "'");
    const std::vector<double> source = video_times(in);
    ASSERT_EQ(source.size(), 200u);
    const auto source_packets = lines(packet_hashes(in, "v:0"));
    // A start and an end anywhere (on a frame or between two), at least 0.2 s apart.
    // The first two from the input's very start (no head to encode), then anywhere.
    const double ss = trial < 2 ? 0.0 : std::uniform_int_distribution<int>(0, 500)(rng) / 100.0;
    const double to = ss + 0.2 + std::uniform_int_distribution<int>(0, 700)(rng) / 100.0;
    SCOPED_TRACE(fmt::format("{} --ss {} --to {}", in, ss, to));
    const std::string out = path(fmt::format("smart-{}.mp4", trial));
    const auto r = run_vpipe(fmt::format(
        "transcode '{}' '{}' --encoder copy --smart-cut --ss {} --to {}", in, out, ss, to));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<double> want;  // what trim keeps, on the output's clock (zero at --ss)
    for (const double t : source)
      if (t >= ss - 1e-6 && t < to - 1e-6) want.push_back(t - ss);
    const std::vector<double> got = video_times(out);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 0.0015) << k;
    // The pictures: trim's, equal where copied (the source's own decode), close elsewhere.
    const auto trimmed = lines(shell_output(fmt::format(
        "ffmpeg -v error -i '{}' -vf trim=start={}:end={} -an -f framemd5 - | grep -v '^#' | "
        "cut -d, -f6",
        in, ss, to)));
    const auto pictures = lines(picture_hashes(out));
    ASSERT_EQ(pictures.size(), trimmed.size());
    int same = 0;
    for (std::size_t k = 0; k < pictures.size(); ++k) same += pictures[k] == trimmed[k];
    const std::smatch m = [&] {
      std::smatch found;
      std::regex_search(r.err, found, std::regex("(\\d+) video packets copied"));
      return found;
    }();
    const int copied = m.empty() ? 0 : std::stoi(m[1]);
    EXPECT_GE(same, copied) << "a copied frame decodes otherwise than the source's";
    const auto packets = lines(packet_hashes(out, "v:0"));
    int from_source = 0;
    for (std::size_t k = 0; k < got.size(); ++k)
      from_source += std::count(source_packets.begin(), source_packets.end(), packets[k]) > 0;
    EXPECT_EQ(from_source, copied)
        << "the copied packets are the source's bytes, the others not: " << r.err;
    copied_total += copied;
    const std::string psnr = shell_output(fmt::format(
        "ffmpeg -v info -i '{}' -i '{}' -filter_complex "
        "'[1:v]trim=start={}:end={},setpts=PTS-STARTPTS[r];[0:v]setpts=PTS-STARTPTS[o];[o][r]psnr' "
        "-f null - 2>&1 | grep -o 'average:[0-9.inf]*'",
        out, in, ss, to));
    ASSERT_FALSE(psnr.empty());
    if (psnr.find("inf") == std::string::npos) {
      EXPECT_GT(std::stod(psnr.substr(8)), 35.0) << psnr;
    }
    // The audio spans the cut: it starts and ends within one AAC frame of the video.
    const std::string audio = shell_output(fmt::format(
        "ffprobe -v error -select_streams a -show_entries packet=pts_time -of csv=p=0 '{}' | "
        "sort -g | sed -n '1p;$p'",
        out));
    const auto ends = lines(audio);
    ASSERT_EQ(ends.size(), 2u) << audio;
    EXPECT_NEAR(std::stod(ends[0]), 0.0, 0.03);
    EXPECT_NEAR(std::stod(ends[1]), want.back(), 0.06);
    EXPECT_EQ(shell_output("md5sum '" + in + "'"), before) << "the input was written";
  }
  EXPECT_GT(copied_total, 300) << "the cuts drawn copied GOPs";
}

// The input's title and its chapters inside the cut go across, clipped and on the output's
// clock, as a re-encoding cut keeps them; a subtitle track is left out, and the report says so.
TEST_F(SmartCut, TitleAndChaptersInsideTheCutGoAcrossAndWhatIsLeftOutIsSaid) {
  const std::string in = path("smart-chapters.mkv"), meta = path("smart-meta.txt");
  std::ofstream(meta) << ";FFMETADATA1\ntitle=Cut Me\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\n"
                         "END=5000\ntitle=One\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=5000\n"
                         "END=8000\ntitle=Two\n";
  const std::string srt = path("smart.srt");
  std::ofstream(srt) << "1\n00:00:01,000 --> 00:00:02,000\nhello\n";
  shell_output(
      fmt::format("ffmpeg -v error -y -i '{}' -i '{}' -i '{}' -map 0 -map 1 "
                  "-map_metadata 2 -map_chapters 2 -c copy -c:s srt '{}' 2>&1",
                  clip(), srt, meta, in));
  const std::string out = path("smart-chapters-out.mkv");
  const auto r = run_vpipe(
      fmt::format("transcode '{}' '{}' --encoder copy --smart-cut --ss 3.3 --to 6.7", in, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 subtitle, data or picture stream left out"), std::string::npos) << r.err;
  const std::string chapters = shell_output(fmt::format(
      "ffprobe -v error -show_entries chapter=start_time,end_time:chapter_tags=title -of csv=p=0 "
      "'{}'",
      out));
  EXPECT_EQ(chapters, "0.000000,1.700000,One\n1.700000,3.400000,Two\n");
  EXPECT_NE(shell_output(fmt::format("ffprobe -v error -show_entries format_tags=title -of "
                                     "csv=p=0 '{}'",
                                     out))
                .find("Cut Me"),
            std::string::npos);
}

TEST_F(SmartCut, ACutInsideOneGopIsReencodedWholeAndStillExact) {
  const std::string in = clip(), out = path("one-gop.mp4");
  const auto r = run_vpipe(
      fmt::format("transcode '{}' '{}' --encoder copy --smart-cut --ss 1.1 --to 1.9", in, out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("all of it was re-encoded"), std::string::npos) << r.err;
  EXPECT_EQ(video_times(out).size(), 20u);
}

TEST_F(SmartCut, WhatItCannotTakeIsRefusedBeforeAnythingIsWritten) {
  const std::string mp4 = clip(), ts = path("annexb.ts"), hevc = make("hevc.mkv", kCases[1].codec);
  shell_output(fmt::format("ffmpeg -v error -y -i '{}' -c copy '{}' 2>&1", mp4, ts));
  // Interlaced coding that the container calls progressive: the SPS says so.
  const std::string fields = path("fields.mkv");
  shell_output(
      fmt::format("ffmpeg -v error -y -f lavfi -i testsrc2=s=320x240:r=25:d=3 -c:v libx264 -flags "
                  "+ildct+ilme -top 1 -bf 0 -field_order progressive '{}' 2>&1",
                  fields));
  const std::pair<std::string, std::string> refused[] = {
      {fmt::format("'{}' --ss 1", fields), "interlaced"},
      {fmt::format("'{}' --ss 1", ts), "parameter sets"},
      {fmt::format("'{}' --ss 1", hevc), "hevc"},
      {fmt::format("'{}'", mp4), "give a cut"},
      {fmt::format("'{}' --ss 1 --vf blur", mp4), "filters"},
      {fmt::format("'{}' --ss 1 --bitrate 1M", mp4), "bitrate"},
  };
  for (const auto& [args, says] : refused) {
    const std::string out = path("refused.mp4");
    const auto r =
        run_vpipe(fmt::format("transcode {} '{}' --encoder copy --smart-cut", args, out));
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  const auto r =
      run_vpipe(fmt::format("transcode '{}' '{}' --ss 1 --smart-cut", mp4, path("refused.mp4")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("encoder copy"), std::string::npos) << r.err;
}
