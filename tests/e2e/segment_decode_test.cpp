// --decode-sessions: one input decoded by several sessions, a segment (GOP)
// each, must give exactly what one decoder gives: the same frames, the same
// timestamps, in the same order. Closed and open GOPs, H.264, HEVC and
// MPEG-2, and keyframes too far apart (one session takes over).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "media_check.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/parallel/segment_decode.hpp"
#include "vpipe/pipeline/session/codec_open.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

struct Seen {
  std::vector<std::pair<std::int64_t, std::size_t>> frames;  // pts, hash of the pixels
  std::vector<std::string> notes;
};

// A frame's pixels, hashed row by row.
std::size_t hash_of(const vpipe::Frame& f) {
  std::size_t h = 0;
  for (int p = 0; p < f.num_planes; ++p) {
    const auto& pl = f.planes[static_cast<std::size_t>(p)];
    for (int y = 0; y < pl.height; ++y)
      h = h * 1099511628211u ^ std::hash<std::string_view>{}(std::string_view(
                                   reinterpret_cast<const char*>(pl.row(y)), pl.row_bytes()));
  }
  return h;
}

Seen decode_all(const std::string& path, int sessions, std::size_t segment_packets = 0,
                int loop = 1) {
  vpipe::TranscodeOptions o;
  o.input = path;
  o.loop = loop;
  o.output = "null";
  o.device = vpipe::Device::kCpu;
  o.decode_sessions = sessions;
  o.segment_packets = segment_packets;
  Seen seen;
  vpipe::RunHooks hooks;
  hooks.on_frame = [&](const vpipe::Frame& f) { seen.frames.emplace_back(f.pts, hash_of(f)); };
  seen.notes = vpipe::transcode(o, hooks).notes;
  return seen;
}

std::string note_of(const Seen& s) {
  for (const auto& n : s.notes)
    if (n.rfind("decode: ", 0) == 0 && n.find("segments") != std::string::npos) return n;
  return "";
}

// A file's video packets as the demuxer gives them: DTS in file order,
// presentation times sorted, the presentation times of the keyframes.
struct Packets {
  std::vector<std::int64_t> dts, pts, keyframe_pts;
};
Packets read_video_packets(const std::string& path) {
  auto in = vpipe::open_input(path);
  const int v = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  Packets p;
  auto pkt = vpipe::make_av_packet();
  while (av_read_frame(in.get(), pkt.get()) >= 0) {
    if (pkt->stream_index == v) {
      p.dts.push_back(pkt->dts);
      p.pts.push_back(pkt->pts);
      if (pkt->flags & AV_PKT_FLAG_KEY) p.keyframe_pts.push_back(pkt->pts);
    }
    av_packet_unref(pkt.get());
  }
  std::sort(p.pts.begin(), p.pts.end());
  return p;
}

bool increasing(const std::vector<std::int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::greater_equal<>()) == v.end();
}

class SegmentDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    VPIPE_NEED_FFMPEG_TOOL();
    dir_ = fs::temp_directory_path() / ("vpipe-segments-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The sample's first 3 s re-encoded with `args` (the ffmpeg tool).
  std::string clip(const std::string& name, const std::string& args) {
    const auto out = (dir_ / name).string();
    const std::string cmd = "ffmpeg -nostdin -v error -y -i " + kSample +
                            " -t 3 -an -vf scale=320:180 " + args + " " + out;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }
  // A raw H.264 or HEVC stream (by the name's extension) that starts on an open
  // GOP's keyframe, not an IDR (H.264's I picture, HEVC's CRA): the B-frames after
  // it refer to a picture before it, so a fresh start drops them.
  std::string starts_on_an_open_gop(const std::string& name) {
    const auto whole = clip("whole-" + name, name.ends_with(".hevc") ? kHevcOpenGop : kH264OpenGop);
    auto in = vpipe::open_input(whole);
    auto pkt = vpipe::make_av_packet();
    std::int64_t second_key = -1;
    for (int keys = 0; keys < 2 && av_read_frame(in.get(), pkt.get()) >= 0;
         av_packet_unref(pkt.get()))
      if ((pkt->flags & AV_PKT_FLAG_KEY) && ++keys == 2) second_key = pkt->pos;
    EXPECT_GT(second_key, 0) << whole;
    std::ifstream from(whole, std::ios::binary);
    from.seekg(second_key);
    const auto out = (dir_ / name).string();
    std::ofstream(out, std::ios::binary) << from.rdbuf();
    return out;
  }
  static constexpr const char* kH264OpenGop =
      "-c:v libx264 -g 12 -bf 3 -x264-params open-gop=1:repeat-headers=1";
  // x265's GOPs are open by default: each keyframe after the first is a CRA.
  static constexpr const char* kHevcOpenGop =
      "-c:v libx265 -x265-params log-level=error:keyint=12:min-keyint=12:scenecut=0:"
      "repeat-headers=1";
  fs::path dir_;
};

}  // namespace

TEST(SegmentPlan, AnOpenGopShowsAPictureBeforeItsKeyframe) {
  EXPECT_FALSE(vpipe::is_open_gop({0, 3, 1, 2}));       // IDR, P, B, B: closed
  EXPECT_TRUE(vpipe::is_open_gop({6, 4, 5, 9, 7, 8}));  // I, then B-frames shown before it
  EXPECT_FALSE(vpipe::is_open_gop({}));
  EXPECT_FALSE(vpipe::is_open_gop({AV_NOPTS_VALUE, 1}));
}

TEST_F(SegmentDecode, EveryCodecAndGopKindGivesWhatOneDecoderGives) {
  struct Case {
    const char* name;
    const char* args;
    bool open;
  };
  for (const Case c : {Case{"closed.mp4", "-c:v libx264 -g 12 -bf 2", false},
                       Case{"open.mp4", "-c:v libx264 -g 12 -bf 2 -x264-params open-gop=1", true},
                       Case{"open-hevc.mkv",
                            "-c:v libx265 -x265-params keyint=12:open-gop=1:log-level=error", true},
                       Case{"mpeg2.ts", "-c:v mpeg2video -g 12 -bf 2", true}}) {
    SCOPED_TRACE(c.name);
    const auto path = clip(c.name, c.args);
    const Seen one = decode_all(path, 1);
    ASSERT_EQ(one.frames.size(), 90u);
    for (int sessions : {2, 4}) {
      const Seen many = decode_all(path, sessions);
      EXPECT_EQ(many.frames, one.frames) << sessions << " sessions";
      const auto note = note_of(many);
      EXPECT_NE(note.find(std::to_string(sessions) + " sessions"), std::string::npos) << note;
      EXPECT_EQ(note.find(", 0 open") == std::string::npos, c.open) << note;
      // Closed GOPs: a session goes on from one segment to the next without
      // the drain and flush that make FFmpeg set the decoder up again (NVDEC:
      // a new hardware decoder per GOP made 2-7 sessions slower than one).
      long segments = 0, restarts = 0;
      ASSERT_EQ(std::sscanf(note.c_str(), "decode: %*d sessions over %ld segments", &segments), 1)
          << note;
      const auto at = note.find(" decoder restarts");
      ASSERT_NE(at, std::string::npos) << note;
      restarts = std::stol(note.substr(note.rfind(' ', at - 1) + 1));
      if (!c.open) {
        EXPECT_LT(restarts, segments) << note;
      }
    }
  }
}

// --loop: each pass gives exactly the frames one pass gives. An H.264 or HEVC pass
// that starts on an IDR is decoded straight on (no drain and flush, after which
// FFmpeg sets the decoder up again: with NVDEC a new hardware decoder per pass);
// the others are drained between passes, as one that starts on an open GOP's I
// picture or CRA must be (straight on, its B-frames would be shown from the pass before).
TEST_F(SegmentDecode, ALoopGivesEachPassTheFramesOfOnePass) {
  for (const auto& [name, args] : std::vector<std::pair<const char*, const char*>>{
           {"closed.mp4", "-c:v libx264 -g 12 -bf 2"},
           {"open.mkv", "-c:v libx264 -g 12 -bf 3 -x264-params open-gop=1"},
           {"annexb.h264", "-c:v libx264 -g 12 -bf 2"},
           {"mpeg2.ts", "-c:v mpeg2video -g 12 -bf 2"},
           {"hevc.mkv", kHevcOpenGop},
           {"annexb.hevc", kHevcOpenGop},
           {"starts-open.h264", ""},
           {"starts-open.hevc", ""}}) {
    SCOPED_TRACE(name);
    const auto path = *args ? clip(name, args) : starts_on_an_open_gop(name);
    const Seen one = decode_all(path, 1);
    ASSERT_EQ(one.frames.size(), *args ? 90u : 78u);  // (its leading B-frames cannot be shown)
    for (const int sessions : {1, 3}) {  // 3: segments, or for a raw stream one session inline
      SCOPED_TRACE(sessions);
      const Seen looped = decode_all(path, sessions, 0, 3);
      ASSERT_EQ(looped.frames.size(), 3 * one.frames.size());
      for (std::size_t i = 0; i < looped.frames.size(); ++i)
        ASSERT_EQ(looped.frames[i].second, one.frames[i % one.frames.size()].second)
            << "frame " << i;
      std::vector<std::int64_t> pts;  // (a raw stream has none: the encoder makes them)
      for (const auto& f : looped.frames)
        if (f.first != AV_NOPTS_VALUE) pts.push_back(f.first);
      EXPECT_TRUE(increasing(pts)) << "presentation times go on increasing from pass to pass";
    }
  }
}

// A raw open-GOP stream remuxed into MP4 with -c copy has pts = dts for every packet: the
// times are the decode order's, so they can neither tell an open GOP from a closed one nor
// match frames to segments (issue #77: 12 of 213 frames were lost, then 16 came twice). One
// session takes over, with cuts and loops, and gives what one decoder and FFmpeg give.
TEST_F(SegmentDecode, ARawStreamRemuxedIntoAContainerGivesWhatOneDecoderGives) {
  const auto raw = clip("remux.h264", kH264OpenGop);
  for (const char* container : {"mp4", "mov"}) {
    SCOPED_TRACE(container);
    const auto path = (dir_ / (std::string("remuxed.") + container)).string();
    const std::string remux = "ffmpeg -nostdin -v error -y -r 25 -i " + raw + " -c copy " + path;
    ASSERT_EQ(std::system(remux.c_str()), 0) << remux;
    const Packets packets = read_video_packets(path);
    ASSERT_EQ(packets.pts, [&] {
      auto dts = packets.dts;
      std::sort(dts.begin(), dts.end());
      return dts;
    }()) << "the remux was to give pts = dts";
    const Seen one = decode_all(path, 1);
    const auto ffmpeg_frames = shell_output(
        "ffprobe -v error -count_frames -select_streams v -show_entries stream=nb_read_frames "
        "-of csv=p=0 " +
        path);
    EXPECT_EQ(std::to_string(one.frames.size()) + "\n", ffmpeg_frames);
    for (const int loop : {1, 2}) {
      for (const int sessions : {2, 4}) {
        SCOPED_TRACE(std::to_string(sessions) + " sessions, loop " + std::to_string(loop));
        const Seen many = decode_all(path, sessions, 0, loop);
        const Seen plain = loop == 1 ? one : decode_all(path, 1, 0, loop);
        EXPECT_EQ(many.frames, plain.frames);
        EXPECT_NE(note_of(many).find("timestamps in decode order"), std::string::npos)
            << note_of(many);
      }
    }
  }
}

// A raw stream falls back to one session inline; a loop of it restarts that
// decoder only where a plain decode would: at a pass that does not start on an
// IDR (with NVDEC, an H.264 restart is a new hardware decoder each pass, a cuvid
// decoder's a new parser and decoder).
TEST_F(SegmentDecode, ALoopOfARawStreamRestartsTheInlineDecoderOnlyWithoutAnIdr) {
  for (const auto& [name, restarts] : std::vector<std::pair<const char*, const char*>>{
           {"annexb.h264", "0 decoder restarts"},
           {"starts-open.h264", "2 decoder restarts"},
           {"annexb.hevc", "0 decoder restarts"},
           {"starts-open.hevc", "2 decoder restarts"}}) {
    SCOPED_TRACE(name);
    const std::string n = name;
    const auto path =
        n.starts_with("starts-open")
            ? starts_on_an_open_gop(n)
            : clip(n, n.ends_with(".hevc") ? kHevcOpenGop : "-c:v libx264 -g 12 -bf 2");
    const std::string note = note_of(decode_all(path, 3, 0, 3));
    EXPECT_NE(note.find("one session took over"), std::string::npos) << note;
    EXPECT_NE(note.find(restarts), std::string::npos) << note;
  }
}

// Which packets let a looped decode go straight on (DecodeStage::restart): an IDR,
// told apart in both forms of H.264 and HEVC (length-prefixed in MP4 and MKV, start
// codes in a raw stream); an open GOP's later keyframes (H.264's I picture, HEVC's
// CRA) and other codecs' keyframes are not.
TEST_F(SegmentDecode, AnIdrIsToldFromOtherPacketsInBothFormsOfH264AndHevc) {
  struct Case {
    const char* name;
    std::string args;
    bool closed;  // every keyframe an IDR
  };
  for (const auto& c :
       std::vector<Case>{{"idr.mp4", kH264OpenGop, false},
                         {"idr.h264", kH264OpenGop, false},
                         {"idr.mkv", kHevcOpenGop, false},
                         {"idr.hevc", kHevcOpenGop, false},
                         {"closed.mp4", std::string(kHevcOpenGop) + ":open-gop=0", true},
                         {"mpeg2.ts", "-c:v mpeg2video -g 12 -bf 2", false}}) {
    SCOPED_TRACE(c.name);
    auto in = vpipe::open_input(clip(c.name, c.args));
    const int v = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    ASSERT_GE(v, 0);
    auto decoder = vpipe::open_decoder(in->streams[v], vpipe::TranscodeOptions{});
    std::vector<bool> idr, key;
    auto pkt = vpipe::make_av_packet();
    while (av_read_frame(in.get(), pkt.get()) >= 0) {
      if (pkt->stream_index == v) {
        idr.push_back(vpipe::idr_picture(*decoder, *pkt));
        key.push_back((pkt->flags & AV_PKT_FLAG_KEY) != 0);
      }
      av_packet_unref(pkt.get());
    }
    ASSERT_EQ(idr.size(), 90u);
    const auto keys = std::count(key.begin(), key.end(), true);
    ASSERT_GE(keys, 7) << "a keyframe every 12 frames";
    if (std::string_view(c.name).ends_with(".ts")) {
      EXPECT_EQ(std::count(idr.begin(), idr.end(), true), 0) << "MPEG-2 has no IDR";
      continue;
    }
    EXPECT_TRUE(idr[0]) << "the encoder starts on an IDR";
    EXPECT_EQ(std::count(idr.begin(), idr.end(), true), c.closed ? keys : 1);
    for (std::size_t i = 0; i < idr.size(); ++i) {
      if (idr[i]) {
        EXPECT_TRUE(key[i]) << "packet " << i << ": an IDR is a keyframe";
      }
    }
  }
}

TEST_F(SegmentDecode, KeyframesTooFarApartFallBackToOneSessionLosingNothing) {
  const auto path = clip("sparse.mp4", "-c:v libx264 -g 1000 -bf 2");
  const Seen one = decode_all(path, 1);
  const Seen many = decode_all(path, 4, 40);
  EXPECT_EQ(many.frames, one.frames);
  EXPECT_NE(note_of(many).find("one session took over"), std::string::npos) << note_of(many);
}

// Issue #40, class 6: a raw .h264 has no timestamps, so an open GOP looked
// closed and each segment lost its leading B-frames (189 of 190 frames, 182
// with three B-frames, "errors 0"). Without timestamps one session decodes.
TEST_F(SegmentDecode, ARawStreamWithOpenGopsKeepsEveryFrame) {
  const auto path = clip("open.h264", "-c:v libx264 -g 12 -bf 3 -x264-params open-gop=1");
  const Seen one = decode_all(path, 1);
  ASSERT_EQ(one.frames.size(), 90u);
  for (int sessions : {2, 4}) {
    const Seen many = decode_all(path, sessions);
    EXPECT_EQ(many.frames, one.frames) << sessions << " sessions";
    EXPECT_NE(
        note_of(many).find("a packet without a timestamp (a raw stream): one session took over"),
        std::string::npos)
        << note_of(many);
  }
}

TEST_F(SegmentDecode, TheCommandLineTakesIt) {
  const auto path = clip("cli.mp4", "-c:v libx264 -g 12");
  const auto out = (dir_ / "out.mkv").string();
  const auto r = run_vpipe("transcode " + path + " " + out +
                           " --device cpu --encoder ffv1 --decode-sessions 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("3 sessions over"), std::string::npos) << r.err;
  EXPECT_EQ(summarize(out).video_packets, 90);
}

namespace {
// The packet numbers of the video keyframes of `path`, in file order.
std::vector<int> keyframes(const std::string& path) {
  auto ctx = vpipe::open_input(path);
  const int v = av_find_best_stream(ctx.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  std::vector<int> keys;
  auto pkt = vpipe::make_av_packet();
  for (int n = 0; av_read_frame(ctx.get(), pkt.get()) >= 0; av_packet_unref(pkt.get())) {
    if (pkt->stream_index != v) continue;
    if (pkt->flags & AV_PKT_FLAG_KEY) keys.push_back(n);
    ++n;
  }
  return keys;
}
}  // namespace

// --gop N: a keyframe at least every N frames (libx264's own default is 250),
// so a file vpipe writes can be split into that many segments.
TEST_F(SegmentDecode, TheGopOptionSetsTheLongestKeyframeInterval) {
  const auto out = (dir_ / "gop.mp4").string();
  const auto r =
      run_vpipe("transcode " + kSample + " " + out + " --device cpu --encoder libx264 --gop 10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto keys = keyframes(out);
  ASSERT_GE(keys.size(), 15u);  // 150 frames
  EXPECT_EQ(keys.front(), 0);
  for (std::size_t i = 1; i < keys.size(); ++i) EXPECT_LE(keys[i] - keys[i - 1], 10) << i;
  const auto bad = run_vpipe("transcode " + kSample + " " + out + " --gop -1");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

// Issue #40: on a 20-frame clip `bench decode` printed the first frames' rate
// as its steady one ("38,048 fps, 265×"). A short clip is looped until a run
// has 300 frames, and it says so.
TEST_F(SegmentDecode, TheDecodeBenchLoopsAShortClip) {
  const auto path = clip("short.mp4", "-c:v libx264 -g 10 -frames:v 20");
  const auto r =
      run_vpipe("bench decode " + path + " --decode cpu --sessions 1 --streams 1 --segments 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has 20 frames; looped ×15"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("| 1 | 300 |"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("| 1 | 20 |"), std::string::npos) << r.out;
}

namespace {
// A row's CPU use (the table's CPU bound): a CPU decode keeps some core busy,
// and no more than the machine's cores can be.
void expect_cpu_use(const nlohmann::json& row) {
  const double busy = row["cpu"]["cores_busy"].get<double>();
  EXPECT_GT(busy, 0.1) << row.dump();
  EXPECT_LE(busy, row["cpu"]["cores"].get<double>() * 1.05) << row.dump();
}
}  // namespace

// `vpipe bench decode --decode cpu`: the three tables measured and written,
// every row's frames accounted for (runs without a GPU).
TEST_F(SegmentDecode, TheDecodeBenchMeasuresProbeStreamsAndSegments) {
  const auto path = clip("bench.mp4", "-c:v libx264 -g 12 -bf 2");
  const auto json_path = (dir_ / "bench.json").string();
  const auto r = run_vpipe(
      "bench decode " + path +
      " --decode cpu --sessions 1,2 --streams 1,2 --segments 1,3 --encoder mpeg4 --json " +
      json_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(json_path);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["loop"], 4) << "90 frames, looped to 300 or more";
  const int n = 90 * j["loop"].get<int>();
  ASSERT_EQ(j["probe"].size(), 2u);
  for (const auto& row : j["probe"]) {
    EXPECT_EQ(row["frames"], n * row["sessions"].get<int>());
    EXPECT_EQ(row["errors"], 0);
    EXPECT_GT(row["steady_fps"].get<double>(), 0);
    EXPECT_EQ(row["session_fps"].size(), row["sessions"].get<std::size_t>());
    EXPECT_TRUE(row["decoder_load"].contains("available"));
    expect_cpu_use(row);
  }
  ASSERT_EQ(j["streams"].size(), 2u);
  for (const auto& row : j["streams"]) {
    expect_cpu_use(row);
    EXPECT_EQ(row["frames"], n * row["streams"].get<int>());
    EXPECT_EQ(row["failed"], 0);
    EXPECT_GT(row["fraction_of_probe_same_sessions"].get<double>(), 0);
  }
  ASSERT_EQ(j["segments"].size(), 2u);
  for (const auto& row : j["segments"]) {
    EXPECT_EQ(row["frames"], n);
    EXPECT_TRUE(row["same_timestamps_as_first"].get<bool>());
  }
  EXPECT_NE(j["segments"][1]["note"].get<std::string>().find("3 sessions"), std::string::npos);
  // --encoder: each K encoded, beside the encoder alone and decode without it.
  EXPECT_EQ(j["encoded"]["encoder"], "mpeg4");
  EXPECT_EQ(j["encoded"]["encoder_alone_frames"], n);
  ASSERT_EQ(j["encoded"]["rows"].size(), 2u);
  for (const auto& row : j["encoded"]["rows"]) {
    EXPECT_EQ(row["frames"], n);
    EXPECT_GT(row["bound_fps"].get<double>(), 0);
    EXPECT_DOUBLE_EQ(row["fraction_of_bound"].get<double>(),
                     row["fps"].get<double>() / row["bound_fps"].get<double>());
  }
  EXPECT_NE(r.out.find("## Raw decode probe"), std::string::npos) << r.out;
}

// bench encode (issue #21's encoder item): K encoders on GOP-aligned segments
// joined into one stream. Read back here packet by packet, apart from the
// bench's own check: every frame there once, DTS strictly increasing across
// the joins, a keyframe where each segment starts, and the same presentation
// times as the one-encoder output.
TEST_F(SegmentDecode, TheEncodeBenchJoinsSegmentsIntoOneStream) {
  const auto out_dir = dir_ / "encoded";
  const auto json_path = (dir_ / "encode.json").string();
  const auto r = run_vpipe("bench encode " + kSample + " --vf resize=320x180 --segments 1,3 " +
                           "--gop 25 --out-dir " + out_dir.string() + " --json " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Packets one = read_video_packets((out_dir / "libx264-k1-r1.mp4").string());
  const Packets three = read_video_packets((out_dir / "libx264-k3-r1.mp4").string());
  ASSERT_EQ(one.pts.size(), 150u);
  ASSERT_EQ(three.pts.size(), 150u);
  EXPECT_EQ(three.pts, one.pts) << "the same presentation times";
  EXPECT_TRUE(std::adjacent_find(three.dts.begin(), three.dts.end(), std::greater_equal<>()) ==
              three.dts.end())
      << "DTS must increase across the joins";
  // 6 GOPs of 25 in 3 segments: segments start at frames 0, 50 and 100.
  for (const int frame : {0, 50, 100})
    EXPECT_NE(std::find(three.keyframe_pts.begin(), three.keyframe_pts.end(),
                        one.pts[static_cast<std::size_t>(frame)]),
              three.keyframe_pts.end())
        << "segment at frame " << frame << " starts with a keyframe";
  EXPECT_EQ(summarize((out_dir / "libx264-k3-r1.mp4").string()).video_packets, 150);
  std::ifstream f(json_path);
  const auto j = nlohmann::json::parse(f);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][1]["segments"], 3);
  EXPECT_EQ(j["rows"][1]["frames_decoded"], 150);
  EXPECT_TRUE(j["rows"][1]["same_pts_as_one"].get<bool>());
}

// The bench's encoder options are the plan's (encoder_controls.hpp): mpeg4, the GPU smoke's
// encoder, has no preset; the bench's own default was libx264's "veryfast", handed to it as an
// option named '' and refused. A preset given to it is refused as transcode refuses it.
TEST_F(SegmentDecode, TheEncodeBenchTakesEachEncodersOwnOptions) {
  const auto r = run_vpipe("bench encode " + kSample + " --quick --encoder mpeg4 --out-dir " +
                           (dir_ / "mpeg4").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto p = run_vpipe("bench encode " + kSample + " --quick --encoder mpeg4 --preset slow");
  EXPECT_EQ(p.exit_code, 2) << p.err;
  EXPECT_NE(p.err.find("encoder mpeg4 takes no preset"), std::string::npos) << p.err;
}

// transcode --encode-segments: the output of 3 encoders at once is one
// stream: every frame once with the one encoder's presentation times, DTS
// increasing across the joins, a keyframe per segment, the audio untouched.
// A live or paced run is refused (it would hold segments of frames).
TEST_F(SegmentDecode, EncodeSegmentsWritesOneStreamWithEveryFrame) {
  const auto one = (dir_ / "one.mp4").string(), three = (dir_ / "three.mp4").string();
  const std::string common = " --device cpu --vf resize=320x180 --gop 25 --encoder libx264";
  ASSERT_EQ(run_vpipe("transcode " + kSample + " " + one + common).exit_code, 0);
  const auto r = run_vpipe("transcode " + kSample + " " + three + common + " --encode-segments 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("encode: 3 encoders at once on segments of 25 frames"), std::string::npos)
      << r.err;
  const Packets a = read_video_packets(one), b = read_video_packets(three);
  ASSERT_EQ(b.pts.size(), 150u);
  EXPECT_EQ(b.pts, a.pts);
  EXPECT_TRUE(increasing(b.dts));
  EXPECT_EQ(b.keyframe_pts.size(), 6u) << "150 frames in segments of 25";
  EXPECT_EQ(summarize(three).audio_packets, summarize(kSample).audio_packets);
  const auto paced = run_vpipe("transcode " + kSample + " " + (dir_ / "p.mp4").string() + common +
                               " --encode-segments 3 --realtime");
  EXPECT_EQ(paced.exit_code, 2) << paced.err;
  EXPECT_NE(paced.err.find("encode_segments 3: holds"), std::string::npos) << paced.err;
}

// The output waiting for a segment whose last pictures are still in a
// session's decoder must not make that session drain (FFmpeg then sets the
// decoder up again; on the H200 7 sessions restarted 16 times over 61 GOPs and
// ran slower than 4): with one segment in flight per session the window is
// always full, and a session still restarts only for the first segment and at
// the end of the input.
namespace {

struct StageRun {
  std::vector<std::int64_t> pts;
  std::vector<std::size_t> hashes;  // each frame's pixels
  vpipe::SegmentDecodeStats stats;
};

// Every video packet of `path` through a SegmentDecodeStage of CPU sessions
// (with a governor: a plain CPU DecodeStage decodes until it decided).
StageRun run_stage(const std::string& path, int sessions, int per_session,
                   std::unique_ptr<vpipe::SessionGovernor> governor = nullptr) {
  auto input = vpipe::open_input(path);
  const int v = av_find_best_stream(input.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  AVStream* video = input->streams[v];
  vpipe::TranscodeOptions o;
  o.input = path;
  vpipe::MediaCounters counters;
  vpipe::SegmentDecodeStage::Auto measure;
  if (governor) {
    measure.governor = std::move(governor);
    measure.plain = std::make_unique<vpipe::DecodeStage>(vpipe::open_decoder(video, o),
                                                         video->time_base, std::nullopt, counters);
  }
  vpipe::SegmentDecodeStage stage(
      sessions,
      [&] {
        return vpipe::DecoderSession{nullptr, vpipe::open_decoder(video, o)};
      },
      video->time_base, std::nullopt, counters, 600, per_session, std::move(measure));
  vpipe::BoundedQueue<vpipe::Frame> frames(100000);
  vpipe::Output<vpipe::Frame> out(&frames);
  for (auto pkt = vpipe::make_av_packet(); av_read_frame(input.get(), pkt.get()) >= 0;
       pkt = vpipe::make_av_packet()) {
    if (pkt->stream_index == v) {
      EXPECT_EQ(stage.process({std::move(pkt)}, out), vpipe::Flow::kContinue);
    }
  }
  stage.finish(out);
  StageRun run;
  while (auto f = frames.pop()) {  // no producer: never blocks
    run.pts.push_back(f->pts);
    run.hashes.push_back(hash_of(*f));
  }
  run.stats = stage.stats();
  return run;
}

}  // namespace

TEST_F(SegmentDecode, AFullWindowDoesNotRestartTheSessionHoldingTheHead) {
  const auto path = clip("window.mp4", "-c:v libx264 -g 6 -bf 2");  // 15 GOPs
  const Seen one = decode_all(path, 1);
  constexpr int kSessions = 3;
  const StageRun run = run_stage(path, kSessions, /*per_session=*/1);
  ASSERT_EQ(run.pts.size(), one.frames.size());
  for (std::size_t i = 0; i < run.pts.size(); ++i) EXPECT_EQ(run.pts[i], one.frames[i].first) << i;
  EXPECT_EQ(run.stats.segments, 15);
  EXPECT_LE(run.stats.restarts, kSessions + 1)
      << "restarts over " << run.stats.segments << " segments";
}

namespace {

// A governor that answers `sessions` and records what the stage told it.
struct FakeGovernor final : vpipe::SessionGovernor {
  FakeGovernor(int answer, std::vector<std::string>& told, double& held_frames)
      : sessions(answer), calls(told), held(held_frames) {}
  void mark() override { calls.push_back("mark"); }
  vpipe::AutoSessions decide(double fps, std::int64_t, double hold_frames) override {
    calls.push_back(fps > 0 ? "decide" : "decide without a rate");
    held = hold_frames;
    return {sessions, "the test says so"};
  }
  int sessions;
  std::vector<std::string>& calls;
  double& held;  // the frames a widened window would hold, as the stage said
};

}  // namespace

// --decode-sessions auto, step 2: the plain decoder decodes while the
// governor measures; then it goes on (as --decode-sessions 1) or segments
// start at the next keyframe. Open GOPs: the first segment's leading pictures
// need the GOP the plain decoder had. Either way the frames are exactly one
// decoder's, pixel for pixel.
TEST_F(SegmentDecode, AutoMeasuresWithThePlainDecoderThenKeepsItOrWidensAtAKeyframe) {
  const auto path = (dir_ / "long.mp4").string();
  const std::string cmd = "ffmpeg -nostdin -v error -y -stream_loop 3 -i " + kSample +
                          " -an -vf scale=320:180 -c:v libx264 -g 12 -bf 2 -x264-params "
                          "open-gop=1 " +
                          path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;  // 20 s: 50 GOPs or more, 600 frames
  const Seen one = decode_all(path, 1);
  for (const int decided : {1, 3}) {
    std::vector<std::string> calls;
    double held = 0;
    const StageRun run = run_stage(path, 4, vpipe::kSegmentsPerSession,
                                   std::make_unique<FakeGovernor>(decided, calls, held));
    ASSERT_EQ(run.pts.size(), one.frames.size()) << decided;
    for (std::size_t i = 0; i < run.pts.size(); ++i) {
      ASSERT_EQ(run.pts[i], one.frames[i].first) << decided << ": frame " << i;
      ASSERT_EQ(run.hashes[i], one.frames[i].second) << decided << ": frame " << i;
    }
    EXPECT_EQ(calls, (std::vector<std::string>{"mark", "decide"})) << decided;
    EXPECT_EQ(run.stats.sessions, decided);
    EXPECT_EQ(run.stats.measured, std::to_string(decided) + " (the test says so)");
    EXPECT_TRUE(run.stats.fell_back.empty()) << "a choice, not a fallback: " << run.stats.fell_back;
    if (decided == 1) {  // the plain decoder to the end: no segment at all
      EXPECT_EQ(run.stats.segments, 0);
      EXPECT_EQ(run.stats.plain_frames, static_cast<std::int64_t>(one.frames.size()));
    } else {  // the span, to the next keyframe, then segments, open ones after their GOP before
      EXPECT_GE(run.stats.plain_frames, vpipe::SegmentDecodeStage::kDecideFrames);
      EXPECT_LE(run.stats.plain_frames, vpipe::SegmentDecodeStage::kDecideFrames + 12);
      EXPECT_GE(run.stats.segments, 30);
      EXPECT_GT(run.stats.open_gops, 0);
    }
    // The window held: segments per session × the mean GOP (12 packets at
    // most; x264 adds a keyframe at a scene cut).
    EXPECT_LE(held, vpipe::kSegmentsPerSession * 12.0) << decided;
    EXPECT_GE(held, vpipe::kSegmentsPerSession * 9.0) << decided;
  }
}

// --decode-sessions auto: one session for the CPU decoder (libavcodec threads
// it already), said in the report; 0 or 65 are usage errors.
TEST_F(SegmentDecode, AutoPicksOneSessionForTheCpuDecoderAndSaysWhy) {
  const auto path = clip("auto.mp4", "-c:v libx264 -g 12");
  const auto r = run_vpipe("transcode " + path + " null --device cpu --decode-sessions auto");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("decode_sessions auto: 1 (the CPU decoder"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sessions over"), std::string::npos) << r.err;  // no segments
  for (const char* bad : {"0", "65", "many"})
    EXPECT_EQ(run_vpipe("transcode " + path + " null --decode-sessions " + bad).exit_code, 2)
        << bad;
}
