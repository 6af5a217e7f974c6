// Aliasing, generated (issue #77 item 5): random runs made of spellings × roles × faults,
// with the invariant as the oracle. After each run, every file the run did not declare
// as its output has its old bytes, and each declared output is whole and playable or as
// it was; where two roles are one file (or a ladder's folder holds another role's file)
// the run is refused before anything is written. No vpipe code decides what a case
// expects: the generator knows which logical file each spelling names.
//
// Faults: a full disk (RLIMIT_FSIZE, in-process, ladders too: the old ladder in the folder
// must stay as it was), and through the CLI a second signal at a random moment and a second
// vpipe on the same files at once. After a fault each declared output is whole and playable,
// or as it was.
//
// VPIPE_ALIASING_CASES (default 2000 in-process, a tenth of that through the CLI) and
// VPIPE_ALIASING_SEED (default fixed) set the run; a failure prints both and the case.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "media_check.hpp"

extern "C" {
#include <libavutil/log.h>
}
#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe::test {
namespace {

namespace fs = std::filesystem;

// The logical files a case may name. kInLadder lies inside the ladder's folder.
enum Logical { kIn, kOld, kNew1, kNew2, kLong, kOdd, kInLadder, kLogicalCount };
const std::string kLongName = std::string(246, 'L') + ".mp4";  // 250 bytes
const std::string kOddName = "odd_\xff\xfe.mp4";               // not UTF-8
const char* const kRel[kLogicalCount] = {"in.mp4",         "old.mp4",         "new1.mp4",
                                         "new2.mkv",       kLongName.c_str(), kOddName.c_str(),
                                         "ladder/prev.mp4"};
const bool kExists[kLogicalCount] = {true, true, false, false, false, false, true};

struct Role {
  Logical file;
  std::string spelling;
  // The name a successful write replaces: the file's own, but a hard link is a name of
  // its own (the output is written beside it and renamed over it: the other name keeps
  // the old bytes).
  std::string written() const {
    return spelling.find("hard_in.mp4") != std::string::npos ? "hard_in.mp4" : kRel[file];
  }
};

// What goes wrong during a case's run.
enum class Fault {
  kNone,
  kFullDisk,      // a 4 KiB file-size limit: every write past it fails
  kSecondSignal,  // CLI: SIGINT, then SIGINT or SIGTERM, at random moments of a paced run
  kTwoRuns,       // CLI: the same command twice at once
};

struct Case {
  Role input;
  std::vector<Role> outputs;          // files, or (ladder) rendition names with no file
  std::optional<Role> side;           // x264-params=dump-yuv=…: a file the encoder writes
  std::optional<Role> report;         // CLI only
  std::optional<std::string> ladder;  // the --hls folder, as spelled
  Fault fault = Fault::kNone;
  int signal_ms = 0, second_ms = 0;  // kSecondSignal: when the first and the second land
  std::string describe() const {
    std::string d = "input " + input.spelling;
    for (const auto& o : outputs) d += " | output " + o.spelling;
    if (side) d += " | dump-yuv " + side->spelling;
    if (report) d += " | report " + report->spelling;
    if (ladder) d += " | --hls " + *ladder;
    if (fault == Fault::kFullDisk) d += " | RLIMIT_FSIZE 4 KiB";
    if (fault == Fault::kSecondSignal)
      d += " | signals at " + std::to_string(signal_ms) + " and +" + std::to_string(second_ms) +
           " ms";
    if (fault == Fault::kTwoRuns) d += " | two runs at once";
    return d;
  }
};

class Aliasing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = fs::temp_directory_path() / ("vpipe_aliasing_" + std::to_string(::getpid()));
    fs::create_directories(base_);
    tiny_ = (base_ / "tiny.mp4").string();
    TranscodeOptions o;  // three 64×36 frames: each case's input, made once
    o.input = kSample;
    o.output = tiny_;
    o.device = Device::kCpu;
    o.max_frames = 3;
    o.filters = "resize=64x36";
    av_log_set_level(AV_LOG_ERROR);  // thousands of encoders: their banners would drown a failure
    (void)transcode(o);
    o.input = tiny_;  // a ladder of the last run, in the folder every case may write
    o.output = "r1";
    o.hls = (base_ / "old_ladder").string();
    o.segment_s = 1;
    o.filters.clear();
    (void)transcode(o);
  }
  static void TearDownTestSuite() {
    av_log_set_level(AV_LOG_INFO);
    fs::remove_all(base_);
  }

  static std::uint64_t seed() {
    const char* s = std::getenv("VPIPE_ALIASING_SEED");
    return s ? std::strtoull(s, nullptr, 10) : 20261207;
  }
  static int cases() {
    const char* n = std::getenv("VPIPE_ALIASING_CASES");
    return n ? std::atoi(n) : 2000;
  }

  // A fresh sandbox: the files that exist before a run, links to some of them.
  void make_sandbox() {
    fs::remove_all(box_);
    fs::create_directories(box_ / "sub");
    fs::copy(base_ / "old_ladder", box_ / "ladder", fs::copy_options::recursive);
    fs::copy_file(tiny_, box_ / kRel[kIn]);
    fs::copy_file(tiny_, box_ / kRel[kInLadder]);
    std::ofstream(box_ / kRel[kOld]) << "the user's old file";
    std::ofstream(box_ / "ladder" / "notes.txt") << "the user's notes";
    fs::create_symlink(kRel[kIn], box_ / "link_in.mp4");
    fs::create_hard_link(box_ / kRel[kIn], box_ / "hard_in.mp4");
    fs::create_symlink(kRel[kOld], box_ / "link_old.mp4");
    fs::create_symlink(kRel[kNew1], box_ / "dangling.mp4");  // names new1.mp4, not there yet
  }

  // One spelling of `f`, from its name, its path, a prefix, or a link to it.
  std::string spell(Logical f, std::mt19937_64& rng) const {
    const std::string rel = kRel[f];
    switch (rng() % 7) {
      case 0:
        return rel;
      case 1:
        return "./" + rel;
      case 2:
        return (box_ / rel).string();
      case 3:
        return "sub/../" + rel;
      case 4:
        return "file:" + rel;
      case 5:
        return (box_ / "sub" / ".." / rel).string();
      default:
        if (f == kIn) return rng() % 2 ? "link_in.mp4" : "hard_in.mp4";
        if (f == kOld) return "link_old.mp4";
        if (f == kNew1) return "dangling.mp4";
        return rel;
    }
  }

  Case generate(std::mt19937_64& rng, bool cli) const {
    Case c;
    const auto any = [&] { return static_cast<Logical>(rng() % kLogicalCount); };
    c.input = {rng() % 5 == 0 ? kInLadder : kIn, {}};
    c.input.spelling = spell(c.input.file, rng);
    if (rng() % 4 == 0) {  // a ladder: outputs name renditions
      const char* dirs[] = {"ladder", "./ladder", "sub/../ladder", "file:ladder"};
      c.ladder = rng() % 2 ? (box_ / "ladder").string() : dirs[rng() % 4];
      c.outputs = {{kLogicalCount, "r1"}};
      if (rng() % 2) c.outputs.push_back({kLogicalCount, "r2"});
    } else {
      const int n = 1 + static_cast<int>(rng() % 2);
      for (int k = 0; k < n; ++k) {
        const Logical f = any();
        c.outputs.push_back({f, spell(f, rng)});
      }
    }
    if (rng() % 5 == 0) c.fault = Fault::kFullDisk;
    if (cli) {  // signals and a second process need a process of their own
      const auto r = rng() % 8;
      c.fault = r == 0 ? Fault::kSecondSignal : r == 1 ? Fault::kTwoRuns : Fault::kNone;
      c.signal_ms = 50 + static_cast<int>(rng() % 900);
      c.second_ms = static_cast<int>(rng() % 150);
    }
    if (rng() % 4 == 0) {  // inside x264-params ':' parts the list: no "file:" spelling there
      const Logical f = any();
      std::string spelling = spell(f, rng);
      if (spelling.rfind("file:", 0) == 0) spelling = spelling.substr(5);
      c.side = Role{f, spelling};
    }
    if (cli && rng() % 2) {
      const Logical f = any();
      c.report = Role{f, spell(f, rng)};
    }
    return c;
  }

  // The generator's own answer: two roles on one logical file (not both read), or a
  // role inside the ladder's folder.
  static bool conflicts(const Case& c) {
    std::vector<std::pair<Logical, bool>> roles{{c.input.file, false}};  // (file, writes)
    for (const auto& o : c.outputs)
      if (o.file != kLogicalCount) roles.push_back({o.file, true});
    // The run's encoder options go to every output's encoder: each writes the side file.
    if (c.side)
      for (std::size_t k = 0; k < c.outputs.size(); ++k) roles.push_back({c.side->file, true});
    if (c.report) roles.push_back({c.report->file, true});
    for (std::size_t i = 0; i < roles.size(); ++i) {
      if (c.ladder && roles[i].first == kInLadder) return true;
      for (std::size_t j = i + 1; j < roles.size(); ++j)
        if (roles[i].first == roles[j].first && (roles[i].second || roles[j].second)) return true;
    }
    return false;
  }

  static std::string slurp_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> bytes;
    for (auto it = fs::recursive_directory_iterator(box_); it != fs::recursive_directory_iterator();
         ++it)
      if (it->is_regular_file() && !it->is_symlink()) {
        std::ifstream f(it->path(), std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        bytes[fs::relative(it->path(), box_).string()] = ss.str();
      }
    return bytes;
  }

  // What may change: the logical files a successful run declared as written.
  static std::set<std::string> declared(const Case& c) {
    std::set<std::string> out;
    for (const auto& o : c.outputs)
      if (o.file != kLogicalCount) out.insert(o.written());
    if (c.side) out.insert(c.side->written());
    if (c.report) out.insert(c.report->written());
    if (c.ladder) {
      out.insert("ladder/master.m3u8");
      for (const auto& o : c.outputs) out.insert("ladder/" + o.spelling + "/");  // its tree
    }
    return out;
  }

  static bool may(const std::set<std::string>& declared, const std::string& name) {
    if (declared.count(name)) return true;
    const auto slash = name.find('/', name.find('/') + 1);  // ladder/RENDITION/…
    return name.rfind("ladder/", 0) == 0 && slash != std::string::npos &&
           declared.count(name.substr(0, slash + 1));
  }

  // After a fault: each declared output file that changed is whole and playable.
  void check_whole(const Case& c, const std::map<std::string, std::string>& before,
                   const std::map<std::string, std::string>& after, const std::string& err) {
    for (const auto& o : c.outputs) {
      if (o.file == kLogicalCount) continue;
      const auto was = before.find(o.written());
      const auto now = after.find(o.written());
      if (now == after.end() || (was != before.end() && was->second == now->second)) continue;
      EXPECT_GT(summarize((box_ / o.written()).string()).video_packets, 0)
          << o.written() << " is neither as it was nor playable; " << err;
    }
    if (!c.ladder || !after.count("ladder/master.m3u8")) return;
    const auto master = after.at("ladder/master.m3u8");
    for (std::size_t at = master.find(".m3u8"); at != std::string::npos;
         at = master.find(".m3u8", at + 1)) {  // every playlist the master names is there
      const auto start = master.rfind('\n', at) + 1;
      const auto name = "ladder/" + master.substr(start, at + 5 - start);
      EXPECT_TRUE(after.count(name)) << "the master names " << name << ", not there; " << err;
    }
  }

  void check(const Case& c, bool refused, bool failed, const std::string& err,
             const std::map<std::string, std::string>& before) {
    const auto after = snapshot();
    const bool conflict = conflicts(c);
    EXPECT_EQ(refused, conflict) << (conflict ? "not refused" : "refused") << ": " << err;
    // A fault's run may have finished its outputs (a signal after the last frame).
    const bool faulted = c.fault == Fault::kSecondSignal || c.fault == Fault::kTwoRuns;
    const auto may_change =
        (refused || (failed && !faulted)) ? std::set<std::string>{} : declared(c);
    for (const auto& [name, bytes] : before) {
      if (may(may_change, name)) continue;
      const auto it = after.find(name);
      EXPECT_TRUE(it != after.end() && it->second == bytes) << name << " lost its bytes; " << err;
    }
    for (const auto& [name, bytes] : after) {
      EXPECT_EQ(name.find(".vpipe-partial"), std::string::npos) << "left behind: " << name;
      const bool made = !before.count(name);
      if (!made) continue;
      EXPECT_TRUE(may(may_change, name)) << "a file nobody declared: " << name << "; " << err;
    }
    if (faulted) check_whole(c, before, after, err);
    if (refused || failed || faulted) return;
    for (const auto& o : c.outputs) {
      if (o.file != kLogicalCount) {
        EXPECT_EQ(summarize((box_ / o.written()).string()).video_packets, 3) << o.written();
      }
    }
    if (c.ladder) {
      for (const auto& o : c.outputs) {
        EXPECT_TRUE(fs::exists(box_ / "ladder" / o.spelling / "index.m3u8")) << o.spelling;
      }
      EXPECT_TRUE(fs::exists(box_ / "ladder" / "master.m3u8"));
    }
  }

  TranscodeOptions options_of(const Case& c) const {
    TranscodeOptions o;
    o.input = c.input.spelling;
    o.device = Device::kCpu;
    o.preset = "ultrafast";
    o.output = c.outputs[0].spelling;
    for (std::size_t k = 1; k < c.outputs.size(); ++k) o.outputs.push_back(c.outputs[k].spelling);
    if (c.ladder) {
      o.hls = *c.ladder;
      o.segment_s = 1;
    }
    if (c.side) o.encoder_options.push_back("x264-params=dump-yuv=" + c.side->spelling);
    return o;
  }

  static inline fs::path base_;
  static inline std::string tiny_;
  fs::path box_ = base_ / "box";
};

// In-process, through the library (the Python front end's path): thousands of cases.
TEST_F(Aliasing, EveryFileNotDeclaredAsOutputKeepsItsBytes) {
  std::mt19937_64 rng(seed());
  const auto cwd = fs::current_path();
  int refused_n = 0, ran_n = 0, failed_n = 0;
  for (int i = 0; i < cases(); ++i) {
    const Case c = generate(rng, false);
    SCOPED_TRACE("VPIPE_ALIASING_SEED=" + std::to_string(seed()) + " case " + std::to_string(i) +
                 ": " + c.describe());
    make_sandbox();
    const auto before = snapshot();
    fs::current_path(box_);
    // Each run in a child process: a fault's file-size limit stays there, and a crash is
    // this case's failure, with its seed, not the end of the test.
    const std::string err_file = (base_ / "err.txt").string();
    const pid_t child = ::fork();
    if (child == 0) {
      std::FILE* err = std::fopen(err_file.c_str(), "w");
      if (c.fault == Fault::kFullDisk) {
        std::signal(SIGXFSZ, SIG_IGN);  // as vpipe's CLI: a write past the limit fails (EFBIG)
        rlimit small{4096, 4096};
        ::setrlimit(RLIMIT_FSIZE, &small);
      }
      int code = 0;
      try {
        (void)transcode(options_of(c));
      } catch (const usage_error& e) {
        std::fputs(e.what(), err);
        code = 2;
      } catch (const std::exception& e) {
        std::fputs(e.what(), err);
        code = 1;
      }
      std::fclose(err);
      std::_Exit(code);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    fs::current_path(cwd);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const bool refused = code == 2, failed = code != 0 && code != 2;
    std::string err = slurp_file(err_file);
    EXPECT_TRUE(code == 0 || code == 1 || code == 2) << "ended by signal " << code - 128;
    if (c.fault == Fault::kFullDisk && !refused) {
      EXPECT_TRUE(failed) << "a 4 KiB limit and the run did not fail";
    }
    if (c.fault == Fault::kNone) {
      EXPECT_FALSE(failed) << err;
    }
    check(c, refused, failed, err, before);
    refused_n += refused;
    failed_n += failed;
    ran_n += !refused && !failed;
    if (HasFailure()) break;  // the first failing case, with its seed, is enough
  }
  std::printf("aliasing: %d cases (seed %llu): %d refused, %d ran, %d failed under a fault\n",
              cases(), static_cast<unsigned long long>(seed()), refused_n, ran_n, failed_n);
  EXPECT_GT(refused_n, 0);
  EXPECT_GT(ran_n, 0);
}

// The exit codes of `args` run in the case's sandbox under its fault: one run, or two at once.
std::vector<int> run_cli(const Case& c, const std::string& args, const fs::path& box,
                         const fs::path& base) {
  const auto q = [](const std::string& s) { return "'" + s + "'"; };
  const std::string vpipe = kBin + " " + args;
  const std::string codes = (base / "codes.txt").string(), err = (base / "err.txt").string();
  std::string script;
  switch (c.fault) {
    case Fault::kSecondSignal:  // paced, so that the signals land mid-run (12 × 0.12 s)
      script = vpipe + " --realtime --loop 12 2>" + q(err) + " & P=$!; sleep " +
               std::to_string(c.signal_ms / 1000.0) + "; kill -INT $P 2>/dev/null; sleep " +
               std::to_string(c.second_ms / 1000.0) + "; kill -" +
               (c.second_ms % 2 ? "TERM" : "INT") + " $P 2>/dev/null; wait $P; echo $? >" +
               q(codes);
      break;
    case Fault::kTwoRuns:
      script = vpipe + " --realtime --loop 4 2>" + q(err) + " & A=$!; " + vpipe +
               " --realtime --loop 4 2>>" + q(err) +
               " & B=$!; wait $A; a=$?; wait $B; echo $a $? >" + q(codes);
      break;
    default:
      script = vpipe + " 2>" + q(err) + "; echo $? >" + q(codes);
  }
  const std::string cmd = "cd " + q(box.string()) + " && (" + script + ") </dev/null >/dev/null";
  (void)std::system(cmd.c_str());
  std::ifstream in(codes);
  std::vector<int> out;
  for (int code = 0; in >> code;) out.push_back(code);
  return out;
}

// Through the command line, where --report is a role too, and where signals and a second
// process are the faults.
TEST_F(Aliasing, TheCommandLineDeclaresItsReportToo) {
  std::mt19937_64 rng(seed() + 1);
  const int n = std::max(1, cases() / 10);
  int faulted = 0, stopped = 0;
  for (int i = 0; i < n; ++i) {
    const Case c = generate(rng, true);
    SCOPED_TRACE("VPIPE_ALIASING_SEED=" + std::to_string(seed()) + " CLI case " +
                 std::to_string(i) + ": " + c.describe());
    make_sandbox();
    const auto before = snapshot();
    const auto q = [](const std::string& s) { return "'" + s + "'"; };
    std::string args = "transcode " + q(c.input.spelling) + " " + q(c.outputs[0].spelling) +
                       " --device cpu --preset ultrafast";
    for (std::size_t k = 1; k < c.outputs.size(); ++k)
      args += " --output " + q(c.outputs[k].spelling);
    if (c.ladder) args += " --hls " + q(*c.ladder) + " --segment 1s";
    if (c.side) args += " --encoder-option " + q("x264-params=dump-yuv=" + c.side->spelling);
    if (c.report) args += " --report " + q(c.report->spelling);
    const auto codes = run_cli(c, args, box_, base_);
    const std::string err = slurp_file((base_ / "err.txt").string());
    ASSERT_EQ(codes.size(), c.fault == Fault::kTwoRuns ? 2u : 1u) << err;
    const bool refused = codes[0] == 2;
    bool failed = false;
    for (const int code : codes) {
      EXPECT_TRUE(code == 0 || code == 1 || code == 2 || code == 130 || code == 143)
          << "exit " << code << "; " << err;
      EXPECT_EQ(code == 2, refused) << "one of two runs refused; " << err;
      failed = failed || (code != 0 && code != 2);
    }
    if (c.fault == Fault::kNone) {
      EXPECT_FALSE(failed) << err;
    }
    if (c.fault == Fault::kTwoRuns && !refused) {  // one may be turned away (a ladder's lock)
      EXPECT_TRUE(codes[0] == 0 || codes[1] == 0) << "neither of two runs finished; " << err;
    }
    faulted += c.fault != Fault::kNone;
    stopped += codes[0] == 130 || codes[0] == 143;
    check(c, refused, failed, err, before);
    if (HasFailure()) break;
  }
  std::printf(
      "aliasing through the CLI: %d cases, %d with a second signal or a second run, %d of them "
      "stopped by the signals\n",
      n, faulted, stopped);
  if (n >= 100) {  // the signals must land mid-run, or the fault is not tried
    EXPECT_GT(stopped, 0);
  }
}

}  // namespace
}  // namespace vpipe::test
