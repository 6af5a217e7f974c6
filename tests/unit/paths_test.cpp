// same_file(): one identity test for every writer (issue #40). FFmpeg opens "file:P",
// "cache:P", "async:P", "subfile,,…,,:P" and each part of "concat:A|B" as P, so each
// of them is the input when P is; symlinks and hard links are the file they name.
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

#include "vpipe/memory/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/dash.hpp"
#include "vpipe/pipeline/io/hls.hpp"
#include "vpipe/pipeline/io/paths.hpp"

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

TEST_F(SameFile, EveryPrefixFfmpegOpensAsTheFileIsTheFile) {
  for (const std::string& url :
       {in_, "file:" + in_, "file://" + in_, "cache:" + in_, "async:file:" + in_,
        "subfile,,start,0,end,0,,:" + in_, "concat:" + (dir_ / "other.mp4").string() + "|" + in_,
        "cache:async:" + in_})
    EXPECT_TRUE(same_file(url, in_)) << url;
  EXPECT_FALSE(same_file("pipe:1", in_));
  EXPECT_FALSE(same_file("udp://127.0.0.1:5000", in_));
  EXPECT_FALSE(same_file((dir_ / "new.mp4").string(), in_)) << "a new name";
}

TEST_F(SameFile, LinksAndOtherSpellingsAreTheFile) {
  fs::create_symlink(in_, dir_ / "sym.mp4");
  fs::create_hard_link(in_, dir_ / "hard.mp4");
  EXPECT_TRUE(same_file((dir_ / "sym.mp4").string(), in_));
  EXPECT_TRUE(same_file((dir_ / "hard.mp4").string(), "file:" + in_));
  EXPECT_TRUE(same_file((dir_ / "." / "in.mp4").string(), in_));
  // A dangling link names its target, which does not exist yet.
  fs::create_symlink(dir_ / "later.mp4", dir_ / "dangling.mp4");
  EXPECT_TRUE(same_file((dir_ / "dangling.mp4").string(), (dir_ / "later.mp4").string()));
}

TEST_F(SameFile, AColonInALocalNameIsAFileNotAProtocol) {
  const std::string colon = (dir_ / "a:b.mp4").string();
  std::ofstream(colon) << "y";
  const auto cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_TRUE(same_file("a:b.mp4", colon));
  EXPECT_EQ(local_files_of("a:b.mp4"), std::vector<std::string>{"a:b.mp4"});
  fs::current_path(cwd);
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
