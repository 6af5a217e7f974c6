// RunFiles (io/run_files.hpp): the one model of the files a run touches (issue #77).
// FFmpeg's meta-protocols are refused by name (the protocol table), so what a run
// touches is what it declares; symlinks, hard links and other spellings of one
// file are that file; a ladder's folder holds nothing of another role.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/dash.hpp"
#include "vpipe/pipeline/io/hls.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/run_files.hpp"

using namespace vpipe;
namespace fs = std::filesystem;

class SameFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vpipe-same-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    in_ = (dir_ / "in.mp4").string();
    std::ofstream(in_) << "x";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string in_;
};

namespace {
// The refusal RunFiles gives for `write` written and `read` read, or "" when none.
std::string refusal(const std::string& read, const std::string& write) {
  RunFiles files;
  try {
    files.reads(read, "input");
    files.writes(write, "output");
    files.check();
  } catch (const usage_error& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST_F(SameFile, EveryMetaProtocolIsRefusedByNameEitherWay) {
  for (const std::string proto : {"tee", "md5", "concat", "concatf", "subfile,,start,0,end,0,,",
                                  "cache", "async", "crypto", "data", "gopher", "unix"}) {
    const std::string url = proto + ":" + in_;
    const std::string name = proto.substr(0, proto.find(','));
    const auto as_output = refusal((dir_ / "x.mp4").string(), url);
    EXPECT_NE(as_output.find("'" + name + "'"), std::string::npos) << url << ": " << as_output;
    const auto as_input = refusal(url, (dir_ / "y.mp4").string());
    EXPECT_NE(as_input.find("'" + name + "'"), std::string::npos) << url << ": " << as_input;
  }
  // The allowed ones pass, and a protocol for reading only is refused as an output.
  EXPECT_EQ(refusal("udp://127.0.0.1:5000", (dir_ / "o.mp4").string()), "");
  EXPECT_EQ(refusal(in_, "srt://127.0.0.1:5000"), "");
  EXPECT_EQ(refusal(in_, "pipe:1"), "");
  EXPECT_NE(refusal(in_, "http://127.0.0.1/x.ts"), "");
  // The whitelist FFmpeg gets holds no meta-protocol.
  for (const std::string meta : {"tee", "md5", "concat", "subfile", "cache", "async", "data"})
    EXPECT_EQ(("," + protocol_whitelist() + ",").find("," + meta + ","), std::string::npos)
        << protocol_whitelist();
}

TEST_F(SameFile, EverySpellingOfTheInputIsTheInput) {
  fs::create_symlink(in_, dir_ / "sym.mp4");
  fs::create_hard_link(in_, dir_ / "hard.mp4");
  for (const std::string& url :
       {in_, "file:" + in_, "file://" + in_, (dir_ / "sym.mp4").string(),
        (dir_ / "hard.mp4").string(), "file:" + (dir_ / "hard.mp4").string(),
        (dir_ / "." / "in.mp4").string(), (dir_ / "sub" / ".." / "in.mp4").string()})
    EXPECT_NE(refusal(in_, url), "") << url;
  EXPECT_EQ(refusal(in_, "pipe:1"), "");
  EXPECT_EQ(refusal(in_, (dir_ / "new.mp4").string()), "") << "a new name";
  // A dangling link names its target, which does not exist yet.
  fs::create_symlink(dir_ / "later.mp4", dir_ / "dangling.mp4");
  RunFiles two;
  two.writes((dir_ / "dangling.mp4").string(), "output 1");
  two.writes((dir_ / "later.mp4").string(), "output 2");
  EXPECT_THROW(two.check(), usage_error);
}

TEST_F(SameFile, AColonInALocalNameIsAFileNotAProtocol) {
  const std::string colon = (dir_ / "a:b.mp4").string();
  std::ofstream(colon) << "y";
  const auto cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_NE(refusal("a:b.mp4", colon), "");
  EXPECT_EQ(scheme_name("a:b.mp4"), "file");
  EXPECT_EQ(ffmpeg_url("a:b.mp4"), "file:a:b.mp4");
  // A name that starts like a protocol FFmpeg has is refused, with the spelling that is a file.
  const auto md5 = refusal(in_, "md5:notes.ts");
  EXPECT_NE(md5.find("./md5:notes.ts"), std::string::npos) << md5;
  fs::current_path(cwd);
}

TEST_F(SameFile, AScriptOrPlaylistInputNamesItsFilesAndALadderHoldsNoOtherRole) {
  std::ofstream(dir_ / "list.ffconcat") << "ffconcat version 1.0\nfile 'in.mp4'\nfile other.mp4\n";
  EXPECT_NE(refusal((dir_ / "list.ffconcat").string(), in_), "");
  EXPECT_NE(refusal((dir_ / "list.ffconcat").string(), (dir_ / "other.mp4").string()), "");
  fs::create_directories(dir_ / "hls" / "720p");
  std::ofstream(dir_ / "hls" / "720p" / "index.m3u8") << "#EXTM3U\n#EXTINF:2,\nseg_00000.ts\n";
  EXPECT_NE(refusal((dir_ / "hls" / "720p" / "index.m3u8").string(),
                    (dir_ / "hls" / "720p" / "seg_00000.ts").string()),
            "");
  RunFiles ladder;  // the input inside the ladder's folder, or a report inside it
  ladder.reads((dir_ / "hls" / "720p" / "index.m3u8").string(), "input");
  ladder.writes_tree((dir_ / "hls").string(), "--hls");
  EXPECT_THROW(ladder.check(), usage_error);
  RunFiles report;
  report.reads(in_, "input");
  report.writes_tree((dir_ / "hls").string(), "--hls");
  report.writes((dir_ / "hls" / "master.m3u8").string(), "--report");
  EXPECT_THROW(report.check(), usage_error);
  RunFiles apart;  // two ladders side by side are two outputs
  apart.reads(in_, "input");
  apart.writes_tree((dir_ / "hls").string(), "stream a --hls");
  apart.writes_tree((dir_ / "hls2").string(), "stream b --hls");
  EXPECT_NO_THROW(apart.check());
}

// write_file(): a report or a benchmark's JSON is written beside its path and
// renamed over it, so a failed write (here a file-size limit, as a full disk)
// leaves the old one whole and no temporary file behind (issue #40, class 2).
TEST_F(SameFile, WriteFileIsWholeOrLeavesTheOldOne) {
  const std::string report = (dir_ / "report.json").string();
  write_file(report, "{\"old\": 1}\n", "report");
  std::ifstream old_in(report);
  std::string text((std::istreambuf_iterator<char>(old_in)), {});
  EXPECT_EQ(text, "{\"old\": 1}\n");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  EXPECT_THROW(write_file(report, std::string(1 << 20, 'x'), "report"), input_error);
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  std::ifstream after(report);
  text.assign((std::istreambuf_iterator<char>(after)), {});
  EXPECT_EQ(text, "{\"old\": 1}\n");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 2) << "in.mp4 and report.json, no temporary file";
}

// A Ctrl-C that came before the input was opened ends the open at once: a FIFO
// with no writer would otherwise wait on, no signal left to break it.
TEST_F(SameFile, AnInterruptBeforeTheOpenEndsItAtOnce) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<int> interrupt{SIGINT};
  InputWatch watch(1e9, &interrupt);
  InputOpenOptions options;
  options.watch = &watch;
  auto opened = std::async(std::launch::async, [&] {
    try {
      (void)open_input(fifo, options);
      return std::string("opened");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  if (opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::ofstream writer(fifo);  // lets the open go on, so the test can end
    FAIL() << "the open waited for a writer after Ctrl-C";
  }
  EXPECT_NE(opened.get().find("interrupted"), std::string::npos);
}

// A failed ladder rendition goes whole: its index, its segments and the
// segment a muxer was still writing (NAME.tmp, renamed when the segment
// ends); anything else in its folder stays, and so does the folder then.
TEST_F(SameFile, AFailedRenditionGoesWithTheSegmentItWasWriting) {
  const auto touch = [](const fs::path& p) { std::ofstream(p) << "x"; };
  const fs::path dash = dir_ / "dash", hls = dir_ / "hls";
  fs::create_directories(dash);
  fs::create_directories(hls);
  for (const char* name : {"manifest.mpd", "manifest.mpd.tmp", "init-stream0.m4s",
                           "chunk-stream0-00001.m4s", "chunk-stream1-00002.m4s.tmp"})
    touch(dash / name);
  for (const char* name : {"index.m3u8", "seg_00000.ts", "seg_00001.ts.tmp", "notes.txt"})
    touch(hls / name);
  remove_dash_rendition((dash / "manifest.mpd").string());
  remove_hls_rendition((hls / "index.m3u8").string());
  EXPECT_FALSE(fs::exists(dash)) << "every file was the rendition's: its folder goes too";
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(hls)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"notes.txt"}) << "not the rendition's: it stays";
}

// ffmpeg_url(): only a name FFmpeg would read as a protocol it lacks is a file.
TEST(FfmpegUrl, AnUnknownProtocolIsALocalNameAndUrlsStayAsTheyAre) {
  EXPECT_EQ(ffmpeg_url("clip:1.mp4"), "file:clip:1.mp4");
  EXPECT_EQ(ffmpeg_url("out.mp4"), "out.mp4");
  EXPECT_EQ(ffmpeg_url("/tmp/a:b.mp4"), "/tmp/a:b.mp4");  // a slash first: no protocol
  for (const std::string url : {"pipe:1", "file:a.mp4", "concat:a.ts|b.ts", "udp://h:5000",
                                "rtsp://h:554/live", "subfile,,start,0,end,0,,:a.mp4"})
    EXPECT_EQ(ffmpeg_url(url), url);
}

// check_side_file(): a report or log sent to "-" shares the standard output with
// nothing else, however the video's output spells it.
TEST(SideFile, TheStandardOutputIsRefusedOnlyWhenTheVideoGoesThere) {
  for (const std::string out : {"-", "pipe:", "pipe:1", "fd:1"})
    EXPECT_THROW(check_side_file("-", "--report", "in.mp4", out), usage_error) << out;
  for (const std::string out : {"out.mp4", "null", "pipe:2", "udp://h:5000", "fd:3"})
    EXPECT_NO_THROW(check_side_file("-", "--report", "in.mp4", out)) << out;
}
