// One exit-code table (apps/commands/exit_codes.hpp, issue #40): `vpipe --help` prints
// it, docs/GUIDE.md repeats it, and every row happens here.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

// `vpipe --help`'s "Exit status:" rows: code → meaning.
std::map<int, std::string> help_table() {
  std::istringstream help(run_vpipe("--help").out);
  std::map<int, std::string> rows;
  bool in = false;
  for (std::string line; std::getline(help, line);) {
    if (line == "Exit status:")
      in = true;
    else if (in && line.size() > 7 && line[0] == ' ')
      rows[std::stoi(line.substr(0, 5))] = line.substr(7);
    else if (in)
      break;
  }
  return rows;
}

class ExitCodes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vpipe_exit_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // The exit status of a paced transcode sent `sig` after a second.
  int signalled(int sig) const {
    const pid_t pid = fork();
    if (pid == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      dup2(null, 2);
      const std::string out = path("signalled-" + std::to_string(sig) + ".mp4");
      execl(kBin.c_str(), kBin.c_str(), "transcode", kSample.c_str(), out.c_str(), "--realtime",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    if (pid < 0) return -1;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  fs::path dir_;
};

}  // namespace

TEST_F(ExitCodes, TheGuideRepeatsTheHelpTable) {
  const auto rows = help_table();
  ASSERT_EQ(rows.size(), 8u) << run_vpipe("--help").out;
  std::ifstream f(env_or("VPIPE_SOURCE_DIR", kBuiltinSourceDir) + "/docs/GUIDE.md");
  ASSERT_TRUE(f);
  std::stringstream readme;
  readme << f.rdbuf();
  int table_rows = 0;
  std::istringstream lines(readme.str());
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  | ", 0) == 0 && line.find(" | ", 4) != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(line[4])))
      ++table_rows;
  EXPECT_EQ(table_rows, static_cast<int>(rows.size()))
      << "docs/GUIDE.md's exit table has other rows";
  for (const auto& [code, meaning] : rows)
    EXPECT_NE(readme.str().find("  | " + std::to_string(code) + " | " + meaning + " |"),
              std::string::npos)
        << "docs/GUIDE.md lacks row " << code << ": " << meaning;
}

TEST_F(ExitCodes, EveryRowHappens) {
  std::map<int, std::string> seen;  // code → what made it
  const auto run = [&](const std::string& args, int want) {
    const auto r = run_vpipe(args);
    EXPECT_EQ(r.exit_code, want) << args << ": " << r.err;
    seen[r.exit_code] = args;
  };
  run("transcode " + kSample + " " + path("ok.mp4") + " --frames 5", 0);
  run("transcode " + path("missing.mp4") + " " + path("out.mp4"), 1);
  // Equally bad values give the same status (an unknown encoder or preset gave 1).
  for (const char* bad :
       {"--crf 99", "--vf bogus", "--encoder bogus", "--preset bogus", "--budget 0", "--mem bogus"})
    run("transcode " + kSample + " " + path("out.mp4") + " " + bad, 2);
  run("soak --duration 2s --max-growth -100 --out " + path("soak"), 3);
  {  // bit flips in the sample's pictures: decoded with errors, every frame written
    std::ifstream in(kSample, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::mt19937 rng(1);
    for (int i = 0; i < 40; ++i) {
      const std::size_t at = bytes.size() / 4 + rng() % (bytes.size() / 2);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
    }
    std::ofstream(path("damaged.mp4"), std::ios::binary) << bytes;
  }
  run("transcode " + path("damaged.mp4") + " " + path("damaged-out.mp4"), 4);
  for (const auto& [sig, want] :
       {std::pair{SIGHUP, 129}, std::pair{SIGINT, 130}, std::pair{SIGTERM, 143}}) {
    EXPECT_EQ(signalled(sig), want) << "signal " << sig;
    seen[want] = "a signal";
  }
  for (const auto& [code, meaning] : help_table())
    EXPECT_TRUE(seen.count(code)) << "no test makes exit " << code << " (" << meaning << ")";
}
