// The command line: help, info, and bad input. Every bad input must give a
// non-zero exit, one line on stderr naming the file (or filter) and the cause,
// no crash, and no output file left behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "media_check.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vpipe_bad_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    out_ = (dir_ / "out.mp4").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs a transcode expected to fail; checks the shared rules, returns stderr.
  std::string expect_clean_failure(const std::string& args, const std::string& must_name,
                                   int rc = 1) {
    const auto r = run_vpipe(args);
    EXPECT_EQ(r.exit_code, rc) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_EQ(r.err.rfind("vpipe: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(must_name), std::string::npos) << "names '" << must_name << "': " << r.err;
    EXPECT_FALSE(fs::exists(out_)) << "no output left behind";
    return r.err;
  }
  std::string write_file(const std::string& name, const std::string& bytes) {
    const auto p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  fs::path dir_;
  std::string out_;
};

// Issue #79 item 6: an FFmpeg user's flags and filter names are answered with vpipe's, one
// line each, generated from the schema's FFmpeg spellings and the filters' FFmpeg names.
TEST(FfmpegNames, EveryFfmpegSpellingIsAnsweredWithVpipesFlag) {
  int cases = 0;
  for (const auto& row : vpipe::option_schema())
    for (const auto& spelling : row.ffmpeg) {
      const auto r = run_vpipe("transcode " + kSample + " /tmp/never.mp4 " + spelling + " 1");
      EXPECT_EQ(r.exit_code, 2) << spelling;
      EXPECT_NE(r.err.find(spelling + " is FFmpeg's; vpipe's is " + row.flag), std::string::npos)
          << r.err;
      EXPECT_FALSE(fs::exists("/tmp/never.mp4"));
      ++cases;
    }
  EXPECT_GE(cases, 30);
  const auto i = run_vpipe("transcode -i " + kSample + " /tmp/never.mp4");
  EXPECT_NE(i.err.find("-i is FFmpeg's; in vpipe: give IN as the first argument"),
            std::string::npos)
      << i.err;
}

TEST(FfmpegNames, EveryFfmpegFilterNameIsAnsweredWithVpipesFilter) {
  auto& filters = vpipe::FilterRegistry::instance();
  int cases = 0;
  for (const auto& ours : filters.names()) {
    std::istringstream names(filters.info(ours).ffmpeg);
    for (std::string word; names >> word; ++cases) {
      const std::string theirs = word.substr(0, word.find(':'));
      try {
        (void)filters.info(theirs);
        ADD_FAILURE() << theirs << " is a vpipe filter too";
      } catch (const vpipe::chain_error& e) {
        EXPECT_NE(std::string(e.what()).find("FFmpeg's " + theirs + " is vpipe's " + ours),
                  std::string::npos)
            << e.what();
      }
    }
  }
  EXPECT_GE(cases, 10);
  const auto r = run_vpipe("transcode " + kSample + " /tmp/never.mp4 --vf scale=640:360");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("vpipe's resize, e.g. resize=1280x720"), std::string::npos) << r.err;
  const auto v = run_vpipe("transcode " + kSample + " /tmp/never.mp4 --vf vflip");
  EXPECT_NE(v.err.find("vpipe's flip, e.g. flip=dir=v"), std::string::npos) << v.err;
}

}  // namespace

TEST_F(BadInput, MissingFile) {
  const auto in = (dir_ / "nope.mp4").string();
  const auto err = expect_clean_failure("transcode " + in + " " + out_, in);
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
}

TEST_F(BadInput, EmptyFile) {
  const auto in = write_file("empty.mp4", "");
  const auto err = expect_clean_failure("transcode " + in + " " + out_, in);
  EXPECT_NE(err.find("empty"), std::string::npos) << err;
}

TEST_F(BadInput, TextFile) {
  const auto in = write_file("notes.mp4", "this is not a video, just some text\n");
  const auto err = expect_clean_failure("transcode " + in + " " + out_, in);
  EXPECT_NE(err.find("Invalid data"), std::string::npos) << err;
  EXPECT_EQ(err.find("cut off"), std::string::npos) << "text is no cut recording: " << err;
}

TEST_F(BadInput, TruncatedMp4) {
  std::ifstream f(kSample, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 100000u);
  const auto in = write_file("truncated.mp4", bytes.substr(0, bytes.size() / 2));
  const auto err = expect_clean_failure("transcode " + in + " " + out_, in);
  // The index (moov) is written last: the error says the recording was cut off.
  EXPECT_NE(err.find("media data but no index"), std::string::npos) << err;
  EXPECT_NE(err.find("cut off"), std::string::npos) << err;
}

// The boxes alone decide: a 64-bit mdat size (a recording over 4 GiB) is read as one; a file
// without media data, or whose boxes turn to noise, gets no word of a cut recording.
TEST_F(BadInput, OnlyAFileWithMediaDataAndNoIndexIsCalledCutOff) {
  const auto box = [](const std::string& type, const std::string& body) {
    const auto n = static_cast<std::uint32_t>(8 + body.size());
    return std::string{char(n >> 24), char(n >> 16 & 0xFF), char(n >> 8 & 0xFF), char(n & 0xFF)} +
           type + body;
  };
  const std::string ftyp = box("ftyp", std::string("isom") + std::string(4, '\0') + "isommp41");
  // size 1: a 64-bit size follows, here 6 GiB, far past the file's end
  const std::string big_mdat = std::string{0, 0, 0, 1} + "mdat" +
                               std::string{0, 0, 0, 1, char(0x80), 0, 0, 0} +
                               std::string(4096, '\x55');
  auto in = write_file("cut64.mp4", ftyp + big_mdat);
  auto err = expect_clean_failure("transcode " + in + " " + out_, in);
  EXPECT_NE(err.find("media data but no index"), std::string::npos) << err;
  // Boxes but no media data, and a box run that turns to noise: refused, with no such word.
  for (const auto& [name, bytes] :
       {std::pair{"no-mdat.mp4", ftyp + box("free", std::string(16, '\0'))},
        std::pair{"noise.mp4", ftyp + std::string(4096, '\xff')}}) {
    in = write_file(name, bytes);
    err = expect_clean_failure("transcode " + in + " " + out_, in);
    EXPECT_NE(err.find("Invalid data"), std::string::npos) << name << ": " << err;
    EXPECT_EQ(err.find("cut off"), std::string::npos) << name << ": " << err;
  }
}

TEST_F(BadInput, UnwritableOutputPath) {
  out_ = (dir_ / "no-such-dir" / "out.mp4").string();
  const auto err = expect_clean_failure("transcode " + kSample + " " + out_, out_);
  EXPECT_NE(err.find("cannot open output"), std::string::npos) << err;
}

TEST_F(BadInput, UnknownFilter) {
  const auto err =
      expect_clean_failure("transcode " + kSample + " " + out_ + " --vf sharpen=2", "sharpen", 2);
  EXPECT_NE(err.find("unknown filter"), std::string::npos) << err;
}

TEST_F(BadInput, BadFilterParameter) {
  const auto err =
      expect_clean_failure("transcode " + kSample + " " + out_ + " --vf blur=sigma=-3", "sigma", 2);
  EXPECT_NE(err.find("blur: bad value '-3'"), std::string::npos) << err;
}

TEST_F(BadInput, UnknownContainer) {
  out_ = (dir_ / "out.nosuchext").string();
  expect_clean_failure("transcode " + kSample + " " + out_, out_);
}

TEST(Cli, HelpTeachesWithExamples) {
  const auto r = run_vpipe("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("transcode"), std::string::npos);
  const auto t = run_vpipe("transcode --help");
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("--vf"), std::string::npos) << t.out;
}

TEST(Cli, MissingArgumentsIsAUsageError) {
  const auto r = run_vpipe("transcode");
  EXPECT_EQ(r.exit_code, 2) << "usage errors are not runtime errors";
}

// --graphs takes on or off; on the CPU path (no CUDA filters) it changes
// nothing and the report has no graph note. (GPU: CudaTranscode.Graphs*.)
TEST(Cli, GraphsTakesOnOrOffAndLeavesTheCpuPathAlone) {
  EXPECT_EQ(run_vpipe("transcode " + kSample + " null --graphs maybe").exit_code, 2);
  const auto report = std::filesystem::temp_directory_path() /
                      ("vpipe-graphs-cpu-" + std::to_string(::getpid()) + ".json");
  const auto r = run_vpipe("transcode " + kSample + " null --device cpu --graphs on --frames 5 " +
                           "--vf invert --report " + report.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["frames"]["video_packets_written"], 5);
  for (const auto& n : j["notes"])
    EXPECT_EQ(n.get<std::string>().rfind("graphs:", 0), std::string::npos);
  std::filesystem::remove(report);
}

TEST(Cli, FiltersListsEveryBuiltin) {
  const auto r = run_vpipe("filters");
  ASSERT_EQ(r.exit_code, 0);
  for (const char* name : {"resize", "blur", "crop", "flip", "invert", "grayscale", "format"})
    EXPECT_NE(r.out.find(std::string(name) + "\n"), std::string::npos) << name;
  EXPECT_NE(r.out.find("sigma"), std::string::npos);
}

TEST(Cli, InfoReportsWhatThisMachineHas) {
  const auto r = run_vpipe("info");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NVDEC through FFmpeg:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVENC through FFmpeg:"), std::string::npos);
  EXPECT_NE(r.out.find("FFmpeg: libavformat"), std::string::npos);
  const bool has_gpu = vpipe::cuda_unavailable_reason().empty();
  EXPECT_EQ(r.out.find("CUDA devices: none") == std::string::npos, has_gpu) << r.out;
}

TEST(Cli, DeviceCudaWithoutAGpuSaysWhy) {
  if (vpipe::cuda_unavailable_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  const auto out = std::filesystem::temp_directory_path() / "vpipe_nogpu.mp4";
  const auto r = run_vpipe("transcode " + kSample + " " + out.string() + " --device cuda");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("device cuda: no usable CUDA device"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Cli, DecodeNvdecWithoutAGpuSaysWhy) {
  if (vpipe::cuda_unavailable_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  const auto out = std::filesystem::temp_directory_path() / "vpipe_nonvdec.mp4";
  auto r = run_vpipe("transcode " + kSample + " " + out.string() + " --decode nvdec");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("decode nvdec: no usable CUDA device"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  r = run_vpipe("transcode " + kSample + " " + out.string() + " --decode nvdec --device cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("decode nvdec needs the CUDA path"), std::string::npos) << r.err;
  r = run_vpipe("transcode " + kSample + " " + out.string() + " --decode gpu");
  EXPECT_EQ(r.exit_code, 2) << "not one of cpu, nvdec, auto";
}

TEST(Cli, BadMemoryStrategyIsAUsageError) {
  const auto r = run_vpipe("transcode " + kSample + " /tmp/x.mp4 --mem cudaMallocManaged");
  EXPECT_EQ(r.exit_code, 2) << "rejected while parsing the command line";
  EXPECT_NE(r.err.find("--mem"), std::string::npos) << r.err;
}

TEST(Cli, BenchPipelineOnTheCpuPathPrintsItsTable) {
  const auto json = std::filesystem::temp_directory_path() / "vpipe_bench_pipeline.json";
  const auto r = run_vpipe("bench pipeline " + kSample +
                           " --device cpu --vf resize=320x180 --json " + json.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| decode | --mem | --host | download | decode-only fps"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("encode-only (libx264"), std::string::npos) << r.out;
  std::ifstream f(json);
  const auto j = nlohmann::json::parse(f);
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& row = j["rows"][0];
  for (const char* run : {"decode_only", "no_encoder", "end_to_end"}) {
    EXPECT_EQ(row[run]["frames"]["video_packets_written"], 150) << run;
    EXPECT_GT(row[run]["fps"].get<double>(), 0) << run;
  }
  EXPECT_EQ(row["decode_only"]["effective_chain"].size(), 0u) << "decode-only runs no filter";
  EXPECT_EQ(row["end_to_end"]["frames"]["encoded"], 150);
  EXPECT_EQ(j["encode_only_frames"], 150);
  std::filesystem::remove(json);
}

// --gpus where no CUDA device is visible: a usage error (exit 2) that says so.
TEST(GpusOption, WithoutACudaDeviceIsAUsageErrorThatSaysSo) {
  if (vpipe::cuda_unavailable_reason().empty()) GTEST_SKIP() << "a CUDA device is visible here";
  const auto r = run_vpipe("transcode " + kSample + " null --streams 2 --gpus all");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--gpus all: no CUDA device is visible"), std::string::npos) << r.err;
}

// Issue #40: a closed stderr (`2>&-`) aborted vpipe at its last line (exit 134).
// Closed stdout, stderr and stdin: the run ends well and the output holds
// video, not vpipe's messages (an output opened as fd 2 would take them).
TEST_F(BadInput, ClosedStandardStreamsNeitherAbortNorLeakIntoTheOutput) {
  // A usage error is printed to a closed stderr: exit 2, no abort.
  EXPECT_EQ(WEXITSTATUS(std::system(("sh -c '" + kBin + " transcode " + kSample + " " + out_ +
                                     " --frames 10 --vf bogus=1 2>&-'")
                                        .c_str())),
            2);
  const int status = std::system(
      ("sh -c '" + kBin + " transcode " + kSample + " " + out_ + " --frames 10 >&- 2>&- <&-'")
          .c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(summarize(out_).video_packets, 10);
}

namespace {

// The subcommands a help page lists ("Subcommands:" up to the next blank line).
std::vector<std::string> subcommands_of(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help.substr(help.find("Subcommands:") + 1));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.rfind("  ", 0) == 0) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

// The look of FLAG's value in a help page ("--mem {naive|pool}=pool" → "{naive|pool}"): `row`'s
// own where the line shows it, else the first word; "" where the page has no FLAG.
std::string value_look(const std::string& help, const vpipe::OptionSpec& row) {
  const auto at = help.find("\n  " + row.flag + " ");
  if (at == std::string::npos) return {};
  const auto rest = help.substr(at + 4 + row.flag.size());
  if (rest.rfind(row.value, 0) == 0) return row.value;
  std::istringstream words(rest);
  std::string look;
  words >> look;
  return look.substr(0, look.find('='));
}

// The positionals a help page's usage line names, each given a stand-in (/dev/null, a file
// that exists): the options' checks run before anything is opened.
std::string stand_ins(const std::string& help) {
  const auto from = help.find("Usage:");
  const auto usage = help.substr(from, help.find('\n', from) - from);
  const auto at = usage.find("[OPTIONS]");
  std::istringstream names(at == std::string::npos ? "" : usage.substr(at + 9));
  std::string args;
  for (std::string name; names >> name;) args += " /dev/null";
  return args;
}

const std::regex kRange(R"((-?[0-9.]+)\.\.(-?[0-9.]+))");  // "0..100000"

// A value the row refuses: the first of a few that its own set() throws on, or "".
std::string refused_value(const vpipe::OptionSpec& row) {
  for (const char* v : {"nope", "0", "-1", "999999999"}) {
    vpipe::TranscodeOptions scratch;
    try {
      row.set(scratch, v);
    } catch (const vpipe::usage_error&) {
      return v;
    }
  }
  return {};
}

}  // namespace

// Every command that takes a transcode option (benches, soak, run's own) spells, shows and
// checks it as transcode's schema row does: for each subcommand the program lists and each
// flag of its help that is a schema row's, the help shows the row's values (or some of them),
// and a value the row refuses is a usage error naming the flag and the value.
TEST(Cli, EveryCommandTakesTranscodeOptionsFromTheSchema) {
  std::vector<std::string> commands;
  for (const auto& name : subcommands_of(run_vpipe("--help").out))
    if (name == "bench")
      for (const auto& b : subcommands_of(run_vpipe("bench --help").out))
        commands.push_back("bench " + b);
    else
      commands.push_back(name);
  ASSERT_GE(commands.size(), 10u) << "the help lists the subcommands and benches";
  int checked = 0;
  for (const auto& command : commands) {
    const auto help = run_vpipe(command + " --help").out;
    for (const auto& row : vpipe::option_schema()) {
      if (row.form != vpipe::Form::kValue && row.form != vpipe::Form::kRepeatable) continue;
      // The one flag that names another thing: how long soak runs each strategy (2h, 20m),
      // not how much of the input an output keeps.
      if (command == "soak" && row.flag == "--duration") continue;
      const auto look = value_look(help, row);
      if (look.empty()) continue;
      if (look.front() == '{') {  // choices: the row's, or some of them
        std::istringstream items(look.substr(1, look.size() - 2));
        for (std::string item; std::getline(items, item, '|');) {
          vpipe::TranscodeOptions scratch;
          EXPECT_NO_THROW(row.set(scratch, item))
              << command << " " << row.flag << " offers " << item << ", which transcode refuses";
        }
      } else if (std::smatch in, of;
                 std::regex_match(look, in, kRange) && std::regex_match(row.value, of, kRange)) {
        // a range: the row's, or within it ("1..100000" of "0..100000")
        EXPECT_TRUE(std::stod(of[1]) <= std::stod(in[1]) && std::stod(in[2]) <= std::stod(of[2]))
            << command << " " << row.flag << " " << look << " is outside " << row.value;
      } else {
        EXPECT_EQ(look, row.value) << command << " " << row.flag;
      }
      const auto bad = refused_value(row);
      if (bad.empty()) continue;
      const auto r = run_vpipe(command + stand_ins(help) + " " + row.flag + " " + bad);
      EXPECT_EQ(r.exit_code, 2) << command << " " << row.flag << " " << bad << ": " << r.err;
      EXPECT_NE(r.err.find(row.flag), std::string::npos) << command << ": " << r.err;
      EXPECT_NE(r.err.find(bad), std::string::npos) << command << ": " << r.err;
      ++checked;
    }
  }
  EXPECT_GE(checked, 15) << "--mem, --decode, --loop, --device on the benches and soak";
}
