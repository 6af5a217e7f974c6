// Audio always arrives (issue #43, item 4): a codec the output's container
// cannot hold is re-encoded to the container's usual one (AAC into MP4 from
// PCM, Opus into WebM from AAC), every track keeps its language, --audio
// copy|encode|none and --audio-codec/--audio-bitrate override, and the audio
// lasts as long as the video and starts with it, within one audio frame.
// ffprobe, not vpipe, reads the outputs.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

struct Track {
  std::string codec, language;
  int sample_rate = 0, channels = 0;
  double start = 0, end = 0;  // the first packet's time, the last one's end (seconds)
};

// The span of audio stream `index` as a player hears it: decoded frames, the
// encoder's priming already dropped (MP4's edit list, Opus's pre-skip): the
// first frame's time, the last one's end.
std::pair<double, double> span(const std::string& path, int index) {
  std::istringstream in(
      shell_output("ffprobe -v error -select_streams " + std::to_string(index) +
                   " -show_entries frame=pts_time,pkt_duration_time -of csv=p=0 " + path));
  double first = 1e9, end = -1e9;
  for (std::string line; std::getline(in, line);) {
    const auto comma = line.find(',');
    if (comma == std::string::npos || line.find("N/A") != std::string::npos) continue;
    const double pts = std::stod(line.substr(0, comma)), dur = std::stod(line.substr(comma + 1));
    first = std::min(first, pts);
    end = std::max(end, pts + dur);
  }
  return {first, end};
}

std::vector<Track> audio_tracks(const std::string& path) {
  std::vector<Track> tracks;
  const auto j = nlohmann::json::parse(
      shell_output("ffprobe -v error -select_streams a -show_entries "
                   "stream=index,codec_name,sample_rate,channels:stream_tags=language -of json " +
                   path));
  for (const auto& s : j["streams"]) {
    Track t;
    t.codec = s.value("codec_name", "");
    t.sample_rate = std::stoi(s.value("sample_rate", "0"));
    t.channels = s.value("channels", 0);
    if (s.contains("tags")) t.language = s["tags"].value("language", "");
    std::tie(t.start, t.end) = span(path, s["index"].get<int>());
    tracks.push_back(t);
  }
  return tracks;
}

class Audio : public ScratchSuite<Audio> {
 public:
  static constexpr const char* kName = "audio_test";
  static constexpr bool kNeedsFfmpegTool = true;

 protected:
  // 4 s at 25 fps; `audio`: ffmpeg's output options for the tracks (two sines).
  static std::string input(const std::string& name, const std::string& audio) {
    const std::string p = path(name);
    if (fs::exists(p)) return p;
    const std::string cmd =
        "ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 -f lavfi -i "
        "sine=frequency=440:sample_rate=44100 -f lavfi -i sine=frequency=660:sample_rate=48000 "
        "-t 4 -map 0:v -c:v libx264 " +
        audio + " " + p;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return p;
  }
  static std::string pcm() {
    return input("pcm.mkv", "-map 1:a -c:a pcm_s16le -metadata:s:a:0 language=fra");
  }
  static std::string two_aac() {
    return input("two.mp4",
                 "-map 1:a -map 2:a -c:a aac -metadata:s:a:0 language=eng "
                 "-metadata:s:a:1 language=deu");
  }
  // vpipe transcode; its exit status and notes.
  static CommandResult run(const std::string& in, const std::string& out,
                           const std::string& args = "") {
    return run_vpipe("transcode " + in + " " + path(out) + " --device cpu " + args);
  }
};

// The audio spans [begin, end) within one audio frame (`frame`: its samples over its rate).
void expect_span(const Track& a, double begin, double end, double frame, const std::string& what) {
  EXPECT_NEAR(a.start, begin, frame) << what << ": where the audio starts";
  EXPECT_NEAR(a.end, end, frame) << what << ": where it ends";
}

}  // namespace

// FLAC 5.1 into MP4: libavformat 59 lists FLAC among MP4's codecs, then
// refuses it at the header as experimental (a row of io/containers.cpp says so).
// The audio still arrives (AAC, its six channels), and audio copy says why it
// cannot; so in a ladder.
TEST_F(Audio, AnExperimentalCodecOfTheContainerIsReencodedNotARefusedHeader) {
  const auto in = input("flac51.mkv", "-map 1:a -c:a flac -af aformat=channel_layouts=5.1");
  auto r = run(in, "flac.mp4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stream #1 (flac) re-encoded to aac: mp4 cannot hold it"), std::string::npos)
      << r.err;
  const auto t = audio_tracks(path("flac.mp4"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].codec, "aac");
  EXPECT_EQ(t[0].channels, 6);
  r = run(in, "flac_copy.mp4", "--audio copy");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("mp4 cannot hold it (audio copy"), std::string::npos) << r.err;
  r = run(in, "flac.mkv");  // Matroska holds it: copied
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(audio_tracks(path("flac.mkv")).size(), 1u);
  EXPECT_EQ(audio_tracks(path("flac.mkv"))[0].codec, "flac");
  // QuickTime's muxer lists FLAC, then refuses it in its header ("flac only supported in MP4":
  // the run stopped before a frame): re-encoded there too.
  r = run(in, "flac.mov");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stream #1 (flac) re-encoded to aac: mov cannot hold it"), std::string::npos)
      << r.err;
  ASSERT_EQ(audio_tracks(path("flac.mov")).size(), 1u);
  EXPECT_EQ(audio_tracks(path("flac.mov"))[0].channels, 6);
  // A ladder's streams go into its segments: HLS's MPEG-TS cannot hold FLAC (it
  // was written as bin_data), DASH's MP4 holds it only as experimental (refused too).
  for (const std::string ladder : {"hls", "dash"}) {
    const auto dir = fs::absolute(path("flac_" + ladder)).string();
    r = run_vpipe("transcode " + in + " a --device cpu --" + ladder + " " + dir);
    ASSERT_EQ(r.exit_code, 0) << ladder << ": " << r.err;
    EXPECT_NE(r.err.find("stream #1 (flac) re-encoded to aac: " + ladder + "'s"), std::string::npos)
        << r.err;
    const auto a = audio_tracks(dir + (ladder == "hls" ? "/a/index.m3u8" : "/a/manifest.mpd"));
    ASSERT_EQ(a.size(), 1u) << ladder;
    EXPECT_EQ(a[0].codec, "aac") << ladder;
    EXPECT_EQ(a[0].channels, 6) << ladder;
  }
}

// What a muxer's query says yes to and its header then refuses, the run stopped on before a
// frame: MXF holds 16- or 24-bit PCM at 48 kHz alone, FLV's PCM 44.1 kHz and its halves.
// The audio is re-encoded to what the muxer takes, at the rate it takes.
TEST_F(Audio, WhatAMuxersHeaderWouldRefuseIsReencodedToWhatItTakes) {
  auto r = run(input("mp3.mkv", "-map 1:a -c:a libmp3lame"), "mp3.mxf");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stream #1 (mp3) re-encoded to pcm_s16le, 44100 Hz resampled to 48000 Hz: "
                       "mxf cannot hold it"),
            std::string::npos)
      << r.err;
  auto t = audio_tracks(path("mp3.mxf"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].codec, "pcm_s16le");
  EXPECT_EQ(t[0].sample_rate, 48000) << "MXF: 48 kHz only";
  EXPECT_NEAR(t[0].end - t[0].start, 4.0, 0.1);
  r = run(input("pcm48.mkv", "-map 2:a -c:a pcm_s16le"), "pcm48.flv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("flv holds it at 44100 Hz, not 48000"), std::string::npos) << r.err;
  t = audio_tracks(path("pcm48.flv"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_NE(t[0].codec, "pcm_s16le");
}

// 7.1 audio into an MPEG-PS (.mpg: MP2) arrives as stereo, FFmpeg's downmix: the note says so
// (it said only "re-encoded to mp2", and 8 channels became 2 unannounced).
TEST_F(Audio, AMixDownToFewerChannelsIsSaid) {
  const auto r =
      run(input("surround.mkv", "-map 2:a -c:a pcm_s16le -af aformat=channel_layouts=7.1"),
          "surround.mpg");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("re-encoded to mp2, 8 channels mixed to 2 (mp2 has no 8-channel layout)"),
            std::string::npos)
      << r.err;
  const auto t = audio_tracks(path("surround.mpg"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].channels, 2);
}

// .vob is written by FFmpeg 5.1's svcd muxer, whose header refused AAC ("Unsupported audio
// codec"): vpipe stopped there. It is re-encoded to the muxer's MP2, as FFmpeg's tool does.
TEST_F(Audio, AacIntoAVobBecomesMp2) {
  const auto r = run(two_aac(), "two.vob");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("re-encoded to mp2"), std::string::npos) << r.err;
  const auto t = audio_tracks(path("two.vob"));
  ASSERT_EQ(t.size(), 2u);
  for (const auto& a : t) EXPECT_EQ(a.codec, "mp2");
}

TEST_F(Audio, PcmIntoMp4BecomesAacKeepingItsLanguageAndLength) {
  const auto r = run(pcm(), "pcm.mp4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stream #1 (pcm_s16le) re-encoded to aac: mp4 cannot hold it"),
            std::string::npos)
      << r.err;
  const auto t = audio_tracks(path("pcm.mp4"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].codec, "aac");
  EXPECT_EQ(t[0].sample_rate, 44100);
  EXPECT_EQ(t[0].language, "fra");
  expect_span(t[0], 0, 4.0, 1024.0 / 44100, "pcm → aac");
}

TEST_F(Audio, AacIntoWebmBecomesOpus) {
  const auto r = run(two_aac(), "two.webm",
                     "--encoder libvpx-vp9 --encoder-option deadline=realtime "
                     "--encoder-option cpu-used=8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = audio_tracks(path("two.webm"));
  ASSERT_EQ(t.size(), 2u) << "every track";
  for (const auto& a : t) {
    EXPECT_EQ(a.codec, "opus");
    EXPECT_EQ(a.sample_rate, 48000) << "Opus's one rate";
  }
  EXPECT_EQ(t[0].language, "eng");
  EXPECT_EQ(t[1].language, "deu");
  for (const auto& a : t) expect_span(a, 0, 4.0, 960.0 / 48000, "aac → opus");
}

// AC3's 5.1 is 5.1(side); libopus codes six channels only as 5.1(back) and lists no
// layouts, so FFmpeg's own tool stops there ("Invalid channel layout"). vpipe gives it the
// layout it takes, the side pair moved to the back by the resampler: six channels arrive.
TEST_F(Audio, SurroundIntoOpusTakesTheLayoutOpusCodes) {
  const auto in = input("ac3.mkv", "-map 1:a -c:a ac3 -af 'aformat=channel_layouts=5.1(side)'");
  const auto r = run(in, "ac3.webm",
                     "--encoder libvpx-vp9 --encoder-option deadline=realtime "
                     "--encoder-option cpu-used=8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = audio_tracks(path("ac3.webm"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].codec, "opus");
  EXPECT_EQ(t[0].channels, 6) << "every channel, none folded down";
  expect_span(t[0], 0, 4.0, 1536.0 / 44100, "ac3 5.1 → opus");
}

TEST_F(Audio, EncodeCodecAndBitrateOverrideAndACutKeepsSync) {
  const auto r =
      run(two_aac(), "enc.mkv", "--audio-codec libopus --audio-bitrate 48k --ss 1.3 --to 3.1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("re-encoded to libopus: asked"), std::string::npos) << r.err;
  const auto t = audio_tracks(path("enc.mkv"));
  ASSERT_EQ(t.size(), 2u);
  for (const auto& a : t) {
    EXPECT_EQ(a.codec, "opus");
    expect_span(a, 0, 3.1 - 1.3, 960.0 / 48000, "a cut, re-encoded");
  }
  // The bit rate reaches the encoder: the audio alone, at 24k and at 96k.
  const auto small = run(two_aac(), "24k.mkv", "--audio-codec libopus --audio-bitrate 24k");
  const auto large = run(two_aac(), "96k.mkv", "--audio-codec libopus --audio-bitrate 96k");
  ASSERT_EQ(small.exit_code + large.exit_code, 0) << small.err << large.err;
  const auto bytes = [](const std::string& f) {
    return std::stod(
        shell_output("ffprobe -v error -select_streams a:0 -show_entries "
                     "packet=size -of csv=p=0 " +
                     f + " | awk '{s += $1} END {print s}'"));
  };
  const double rate_small = bytes(path("24k.mkv")) * 8 / 4,
               rate_large = bytes(path("96k.mkv")) * 8 / 4;
  EXPECT_NEAR(rate_small, 24000, 8000);
  EXPECT_NEAR(rate_large, 96000, 24000);
}

// Issue #79 item 5: --audio-channels and --audio-rate (FFmpeg's -ac, -ar) make each track
// that many channels at that rate, as FFmpeg's tool does; an encoder or container that cannot
// code them refuses the run before any work, and copied audio refuses them.
TEST_F(Audio, ChannelsAndRateAreWhatWasAskedOrRefused) {
  for (const auto& [channels, rate] : {std::pair{1, 22050}, {6, 48000}, {2, 32000}}) {
    SCOPED_TRACE(fmt::format("{} channels at {} Hz", channels, rate));
    const std::string out = fmt::format("shape-{}-{}.mkv", channels, rate);
    const auto r =
        run(two_aac(), out, fmt::format("--audio-channels {} --audio-rate {}", channels, rate));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string theirs = path("ffmpeg-" + out);
    ASSERT_EQ(std::system(fmt::format("ffmpeg -v error -y -i {} -map 0 -c:v copy -c:a aac -ac {} "
                                      "-ar {} {}",
                                      two_aac(), channels, rate, theirs)
                              .c_str()),
              0);
    const auto ours = audio_tracks(path(out)), ffmpegs = audio_tracks(theirs);
    ASSERT_EQ(ours.size(), 2u);
    ASSERT_EQ(ffmpegs.size(), 2u);
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(ours[k].channels, channels);
      EXPECT_EQ(ours[k].channels, ffmpegs[k].channels);
      EXPECT_EQ(ours[k].sample_rate, rate);
      EXPECT_NEAR(ours[k].end - ours[k].start, ffmpegs[k].end - ffmpegs[k].start, 1024.0 / rate);
    }
  }
  for (const auto& [args, says] :
       {std::pair<std::string, std::string>{"--audio-codec libopus --audio-rate 44100",
                                            "audio_rate 44100: encoder libopus"},
        {"--audio copy --audio-channels 1", "audio_channels: the audio is copied"},
        {"--audio none --audio-rate 8000", "audio_rate: the audio is left out"}}) {
    const auto r = run(two_aac(), "refused.mkv", args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(path("refused.mkv")));
  }
}

TEST_F(Audio, NoneLeavesItOutAndCopyRefusesWhatTheContainerCannotHold) {
  auto r = run(two_aac(), "none.mp4", "--audio none");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(audio_tracks(path("none.mp4")).empty());
  r = run(pcm(), "copy.mp4", "--audio copy");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(
      r.err.find("stream #1 (pcm_s16le) cannot be copied as it is: mp4 cannot hold it (audio copy"),
      std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(path("copy.mp4")));
  r = run(two_aac(), "bad.mp4", "--audio-codec pcm_s16le");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("mp4 cannot hold pcm_s16le audio"), std::string::npos) << r.err;
}
