// The run's files, class by class (issue #77): each way a hostile user found to make vpipe
// write a file it had not declared, now refused before any byte is written (exit 2), the
// input keeping its bytes. The generated runs are tests/e2e/aliasing_test.cpp; these are the
// roles it does not draw: encoder side files in every spelling, playlists, image sequences,
// the standard input and output, script inputs, and a second signal during a ladder.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "media_check.hpp"

namespace vpipe::test {
namespace {

namespace fs = std::filesystem;

class RunFilesCli : public ScratchSuite<RunFilesCli> {
 public:
  static constexpr const char* kName = "run_files_test";
  static constexpr bool kNeedsFfmpegTool = true;

 protected:
  static int sh(const std::string& cmd) {
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  static std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  // `vpipe ARGS` in the scratch folder (ARGS may hold redirections): its exit status.
  static int vpipe_in_dir(const std::string& args) {
    return sh("cd " + dir().string() + " && " + kBin + " " + args + " 2>>" + path("err.txt"));
  }
  static void make(const std::string& name, const std::string& args) {
    ASSERT_EQ(sh("cd " + dir().string() + " && ffmpeg -nostdin -v error -y " + args + " " + name),
              0);
  }
};

TEST_F(RunFilesCli, EveryFileARunWouldWriteIsDeclaredAndAConflictRefused) {
  make("in.mp4", "-f lavfi -i testsrc2=size=160x90:rate=25 -t 1 -c:v libx264 -g 5");
  make("in.ts", "-i in.mp4 -c copy");
  for (int i = 1; i <= 3; ++i) make("seq" + std::to_string(i) + ".png", "-i in.mp4 -frames:v 1");
  fs::create_directories(dir() / "pl");
  make("pl/index.m3u8",
       "-i in.mp4 -c copy -hls_time 0.2 -hls_segment_type fmp4 "
       "-hls_fmp4_init_filename init.mp4");
  std::ofstream(dir() / "l.ffconcat") << "ffconcat version 1.0\nfile 'tee:a.mp4'\n";
  fs::create_directories(dir() / "src");
  fs::create_directories(dir() / "lad");
  fs::copy_file(dir() / "in.ts", dir() / "src" / "seg_00000.ts");
  fs::create_directory_symlink("../src", dir() / "lad" / "720p");
  fs::copy_file(dir() / "in.mp4", dir() / "in.mp4.temp");
  fs::copy_file(dir() / "in.mp4", dir() / "x264_2pass.log");
  const std::string c = " --device cpu --frames 5 --preset ultrafast";
  struct Case {
    std::string args, kept;  // the file that must keep its bytes
  };
  for (const Case& k : std::vector<Case>{
           {"transcode in.mp4 o.mp4 --encoder libx264 --encoder-option "
            "x264-params=dump_yuv=in.mp4" +
                c,
            "in.mp4"},
           {"transcode in.mp4 o.mp4 --encoder libx264 --encoder-option "
            "x264-params=dump-yuv=a.yuv:dump_yuv=in.mp4" +
                c,
            "in.mp4"},
           {"transcode in.mp4.temp o.mp4 --encoder libx264 --encoder-option "
            "x264-params=stats=in.mp4:pass=1" +
                c,
            "in.mp4.temp"},
           {"transcode x264_2pass.log o.mp4 --encoder libx264 --encoder-option flags=+pass1" + c,
            "x264_2pass.log"},
           {"transcode in.ts out.m3u8" + c, "in.ts"},
           {"transcode src/seg_00000.ts 720p --hls lad" + c, "src/seg_00000.ts"},
           {"transcode - in.ts" + c + " < in.ts", "in.ts"},
           {"transcode in.mp4 -" + c + " >> in.mp4", "in.mp4"},
           {"transcode 'seq%d.png' o.mp4 --device cpu --frames 3 --report seq2.png", "seq2.png"},
           {"transcode pl/index.m3u8 pl/init.mp4" + c, "pl/init.mp4"},
           {"transcode l.ffconcat o.mp4" + c, "l.ffconcat"},
           {"transcode in.mp4 o.mp4 --encoder libx264 --encoder-option x264-params=bogus=1" + c,
            "in.mp4"},
       }) {
    SCOPED_TRACE(k.args);
    const std::string before = slurp(dir() / k.kept);
    ASSERT_FALSE(before.empty());
    fs::remove(path("err.txt"));
    EXPECT_EQ(vpipe_in_dir(k.args), 2) << slurp(path("err.txt"));
    EXPECT_EQ(slurp(dir() / k.kept), before) << k.kept << " was written";
  }
  // --report and the streamed output are one file when the standard output is that file.
  fs::remove(path("err.txt"));
  EXPECT_EQ(vpipe_in_dir("transcode in.mp4 -" + c + " --report o.json > o.json"), 2);
  EXPECT_NE(slurp(path("err.txt")).find("are one file"), std::string::npos)
      << slurp(path("err.txt"));
  EXPECT_EQ(vpipe_in_dir("transcode in.mp4 -" + c + " --report o.json | cat >/dev/null"), 0)
      << "a pipe is not the report's file";
}

// A second signal (Ctrl-C and SIGTERM, sent together) during a ladder: its staging folder goes
// at once (async-signal-safe), and the ladder already in the folder stays as it was.
TEST_F(RunFilesCli, ASecondSignalDuringALadderRemovesItsStagingFolder) {
  make("in.mp4", "-f lavfi -i testsrc2=size=320x180:rate=25 -t 4 -c:v libx264 -g 25");
  ASSERT_EQ(vpipe_in_dir("transcode in.mp4 720p --device cpu --hls quit --segment 1s"), 0);
  const std::string master = slurp(path("quit/master.m3u8"));
  const std::string cmd =
      "cd " + dir().string() + " && (" + kBin +
      " transcode in.mp4 720p --device cpu --realtime --loop 3 --hls quit --segment 1s "
      "2>err2.txt & P=$!; sleep 1.5; kill -INT $P; kill -TERM $P; "
      "wait $P; exit $?)";
  const int rc = sh(cmd);  // 128 + whichever of the two the kernel delivered second
  EXPECT_TRUE(rc == 130 || rc == 143) << rc << ": " << slurp(path("err2.txt"));
  EXPECT_NE(slurp(path("err2.txt")).find("removed the unfinished output"), std::string::npos)
      << slurp(path("err2.txt"));
  EXPECT_EQ(slurp(path("quit/master.m3u8")), master);
  for (const auto& e : fs::recursive_directory_iterator(dir() / "quit"))
    EXPECT_EQ(e.path().filename().string().find(".vpipe-partial"), std::string::npos)
        << e.path() << "; " << slurp(path("err2.txt"));
}

}  // namespace
}  // namespace vpipe::test
