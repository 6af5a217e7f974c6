// vpipe run's pure parts: which streams a shard takes, and the config's checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "run/fleet.hpp"
#include "run/fleet_config.hpp"

namespace vpipe {
namespace {

std::vector<std::string> names(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("cam" + std::to_string(i * 7 % n));
  return out;
}

TEST(Shard, EveryStreamRunsOnExactlyOneShardAndShardsDifferByAtMostOne) {
  for (int streams : {0, 1, 5, 12, 13, 100})
    for (int shards : {1, 2, 3, 7, 16}) {
      std::map<std::string, int> seen;
      std::size_t lo = SIZE_MAX, hi = 0;
      for (int i = 0; i < shards; ++i) {
        const auto mine = shard_streams(names(streams), i, shards);
        lo = std::min(lo, mine.size());
        hi = std::max(hi, mine.size());
        for (const auto& n : mine) seen[n]++;
      }
      EXPECT_EQ(seen.size(), static_cast<std::size_t>(streams)) << streams << " on " << shards;
      for (const auto& [n, k] : seen) EXPECT_EQ(k, 1) << n;
      EXPECT_LE(hi - lo, 1u) << streams << " on " << shards;
    }
}

TEST(Shard, TheAnswerDoesNotDependOnTheFilesOrder) {
  auto a = names(12);
  auto b = a;
  std::reverse(b.begin(), b.end());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(shard_streams(a, i, 3), shard_streams(b, i, 3));
  EXPECT_EQ(shard_streams({"b", "a", "c"}, 0, 2), (std::vector<std::string>{"a", "c"}));
}

TEST(Shard, OutOfRangeIsRefused) {
  EXPECT_THROW((void)shard_streams({"a"}, 3, 3), input_error);
  EXPECT_THROW((void)shard_streams({"a"}, 0, 0), input_error);
  EXPECT_EQ(parse_shard("2/5"), (std::pair{2, 5}));
  for (const char* bad : {"2", "5/2", "a/b", "1/2x", "-1/3"})
    EXPECT_THROW((void)parse_shard(bad), input_error) << bad;
}

class FleetConfigTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() /
            ("vpipe-fleet-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path_) << text;
    return path_.string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(FleetConfigTest, DefaultsApplyAndStreamsOverride) {
  const auto c =
      load_fleet_config(write("defaults: {vf: \"resize=640x360\", mem: slab, restart: {max: 3}}\n"
                              "streams:\n"
                              "  - {name: a, input: in.mp4, output: a.mp4}\n"
                              "  - {name: b, input: \"udp://0.0.0.0:5000\", output: b.ts, mem: "
                              "pool, restart: {max: 0}}\n"));
  ASSERT_EQ(c.streams.size(), 2u);
  EXPECT_EQ(c.streams[0].options.filters, "resize=640x360");
  EXPECT_EQ(c.streams[0].options.mem, vpipe::Strategy::kSlab);
  EXPECT_EQ(c.streams[0].restart.max, 3);
  EXPECT_FALSE(c.streams[0].restart_on_end) << "a file that ends is done";
  EXPECT_EQ(c.streams[1].options.mem, vpipe::Strategy::kPool);
  EXPECT_EQ(c.streams[1].restart.max, 0);
  EXPECT_TRUE(c.streams[1].restart_on_end) << "a live feed that ends is restarted";
  EXPECT_FALSE(same_stream(c.streams[0], c.streams[1]));
  EXPECT_TRUE(same_stream(c.streams[0], c.streams[0]));
}

TEST_F(FleetConfigTest, MistakesNameTheFileTheStreamAndTheKey) {
  const auto error_of = [&](const std::string& text) {
    try {
      (void)load_fleet_config(write(text));
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("streams: [{name: a, input: x}]")
                .find("streams[0] (a): 'input' and 'output' are required"),
            std::string::npos);
  EXPECT_NE(error_of("streams: [{name: a, input: x, output: y, colour: red}]")
                .find("unknown key 'colour'"),
            std::string::npos);
  EXPECT_NE(
      error_of("streams: [{name: a, input: x, output: y.mp4}, {name: a, input: x, output: z.mp4}]")
          .find("the name 'a' is used twice"),
      std::string::npos);
  EXPECT_NE(error_of("streams:\n  - name: [a\n").find(".yaml:3:"), std::string::npos)
      << "YAML syntax: the line";
  EXPECT_NE(error_of("streams: [{name: a, input: x, output: y, mem: pool, device: gpu}]")
                .find("device gpu"),
            std::string::npos);
  EXPECT_NE(error_of("just text").find("expected a map with a 'streams' list"), std::string::npos);
  // Issue #40: a bad key in defaults was blamed on streams[0], and no line was given.
  const auto in_defaults =
      error_of("defaults: {colour: red}\nstreams: [{name: a, input: x, output: y.mp4}]");
  EXPECT_NE(in_defaults.find("defaults, line 1: unknown key 'colour'"), std::string::npos)
      << in_defaults;
  EXPECT_EQ(in_defaults.find("streams[0]"), std::string::npos) << in_defaults;
  EXPECT_NE(error_of("streams:\n  - {name: a, input: x, output: y.mp4,\n     colour: red}")
                .find("streams[0], line 3: unknown key 'colour'"),
            std::string::npos);
  EXPECT_NE(
      error_of("streams:\n  - {name: a, input: x, output: y.mp4,\n     crf: 99}").find("line 3"),
      std::string::npos);
  // What would fail before the first frame fails at load, and so at --check.
  for (const auto& [setting, says] :
       {std::pair{"vf: bogus", "unknown filter 'bogus'"},
        std::pair{"encoder: nope", "encoder nope"}, std::pair{"preset: bogus", "preset bogus"},
        std::pair{"vf: 'blur=sigma=-1'", "sigma"}}) {
    const auto e =
        error_of(std::string("streams: [{name: a, input: x, output: y.mp4, ") + setting + "}]");
    EXPECT_NE(e.find("streams[0] (a): "), std::string::npos) << setting << ": " << e;
    EXPECT_NE(e.find(says), std::string::npos) << setting << ": " << e;
  }
  EXPECT_NE(error_of("streams: [{name: a, input: x, output: y.nosuchext}]")
                .find("cannot tell the container"),
            std::string::npos);
}

// Identity, not names (issue #40): a stream may not write an input (its own or
// another's, whatever prefix or link names it), the config, another stream's output
// or the --report file; the report may not be the config or an input.
TEST_F(FleetConfigTest, NoStreamWritesAnInputTheConfigOrAnotherStreamsOutput) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("vpipe-ids-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "in.mp4").string(), link = (dir / "link.mp4").string();
  std::ofstream(in) << "x";
  std::filesystem::create_symlink(in, link);
  const auto error_of = [&](const std::string& streams, const std::string& report = {}) {
    try {
      check_fleet_paths(load_fleet_config(write("streams:\n" + streams)), report);
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("  - {name: a, input: " + in + ", output: \"file:" + in + "\"}\n")
                .find("stream 'a' input"),
            std::string::npos);
  EXPECT_NE(error_of("  - {name: a, input: \"udp://127.0.0.1:5000\", output: a.ts}\n"
                     "  - {name: b, input: " +
                     in +
                     ", output: x.mp4}\n"
                     "  - {name: c, input: x.ts, output: " +
                     link + "}\n")
                .find("stream 'b' input"),
            std::string::npos)
      << "through a symlink";
  EXPECT_NE(error_of("  - {name: a, input: " + in + ", output: " + (dir / "o.mp4").string() +
                     "}\n"
                     "  - {name: b, input: " +
                     in + ", output: " + (dir / "." / "o.mp4").string() + "}\n")
                .find("are one file"),
            std::string::npos);
  EXPECT_NE(error_of("  - {name: a, input: " + in + ", output: " + path_.string() + "}\n")
                .find("the config '"),
            std::string::npos);
  const std::string ok =
      "  - {name: a, input: " + in + ", output: " + (dir / "o.mp4").string() + "}\n";
  EXPECT_EQ(error_of(ok), "no error");
  EXPECT_NE(error_of(ok, (dir / "o.mp4").string()).find("--report '"), std::string::npos);
  EXPECT_NE(error_of(ok, "file:" + in).find("stream 'a' input"), std::string::npos);
  EXPECT_NE(error_of(ok, path_.string()).find("is the config"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vpipe
