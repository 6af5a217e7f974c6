// same_file(): one identity test for every writer (issue #40). FFmpeg opens "file:P",
// "cache:P", "async:P", "subfile,,…,,:P" and each part of "concat:A|B" as P, so each
// of them is the input when P is; symlinks and hard links are the file they name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "vpipe/pipeline/paths.hpp"

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
