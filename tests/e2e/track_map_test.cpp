// --map (issue #79 item 5): which audio and subtitle tracks an output keeps. The cases are
// generated: every selector of the form a, a:N, a:LANG, s, s:N, s:LANG over a file with three
// audio tracks (eng, fre, ENG) and two subtitle tracks (eng, ger), alone and in pairs; the
// tracks kept (found by their titles with ffprobe) must be those the selectors name by a model
// written here, in the input's order, and a selector that names no track is refused naming it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "media_check.hpp"

using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {

class TrackMap : public ScratchSuite<TrackMap> {
 public:
  static constexpr const char* kName = "track_map_test";
  static constexpr bool kNeedsFfmpegTool = true;
};

struct Track {
  char type;  // 'a' or 's'
  int nth;    // among its type's, from 0
  std::string lang, title;
};

const std::vector<Track> kTracks = {{'a', 0, "eng", "A0"},
                                    {'a', 1, "fre", "A1"},
                                    {'a', 2, "ENG", "A2"},  // tags come in either case
                                    {'s', 0, "eng", "S0"},
                                    {'s', 1, "ger", "S1"}};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The model: the tracks a selector names (a language in either case).
std::set<std::string> named(const std::string& sel) {
  std::set<std::string> out;
  const char type = sel[0];
  const std::string rest = sel.size() > 2 ? sel.substr(2) : "";
  for (const Track& t : kTracks)
    if (t.type == type &&
        (rest.empty() || rest == std::to_string(t.nth) || lower(rest) == lower(t.lang)))
      out.insert(t.title);
  return out;
}

}  // namespace

TEST_F(TrackMap, TheTracksKeptAreThoseTheSelectorsNameAndAnEmptySelectorIsRefused) {
  const std::string in = path("tracks.mkv"), srt = path("x.srt");
  std::ofstream(srt) << "1\n00:00:00,500 --> 00:00:01,500\nhello\n";
  std::string args = "-f lavfi -i testsrc2=s=160x120:r=25:d=2";
  std::string maps = "-map 0:v";
  std::string meta;
  int input = 1;
  for (const Track& t : kTracks) {
    args += t.type == 'a' ? fmt::format(" -f lavfi -i sine=f={}:d=2", 300 + 200 * input)
                          : fmt::format(" -i '{}'", srt);
    maps += fmt::format(" -map {}", input++);
    meta += fmt::format(" -metadata:s:{}:{} language={} -metadata:s:{}:{} title={}", t.type, t.nth,
                        t.lang, t.type, t.nth, t.title);
  }
  shell_output(fmt::format("ffmpeg -v error -y {} {} -c:v libx264 -c:a aac -c:s srt {} '{}' 2>&1",
                           args, maps, meta, in));
  std::vector<std::string> selectors;
  for (const std::string type : {"a", "s"}) {
    selectors.push_back(type);
    for (int n = 0; n <= 3; ++n) selectors.push_back(fmt::format("{}:{}", type, n));
    for (const std::string lang : {"eng", "fre", "ger", "ENG"})
      selectors.push_back(type + ":" + lang);
  }
  std::vector<std::vector<std::string>> cases;
  for (std::size_t i = 0; i < selectors.size(); ++i) {
    cases.push_back({selectors[i]});
    for (std::size_t j = i + 1; j < selectors.size(); j += 3)  // a spread of pairs
      cases.push_back({selectors[i], selectors[j]});
  }
  int kept_cases = 0, refused_cases = 0;
  for (const auto& c : cases) {
    std::string flags;
    std::set<std::string> want;
    bool empty_one = false;
    for (const auto& sel : c) {
      flags += " --map " + sel;
      const auto n = named(sel);
      empty_one = empty_one || n.empty();
      want.insert(n.begin(), n.end());
    }
    SCOPED_TRACE(flags);
    const std::string out = path("kept.mkv");
    fs::remove(out);
    const auto r = run_vpipe(fmt::format("transcode '{}' '{}' --frames 5{}", in, out, flags));
    if (empty_one) {  // a selector that names no track: refused, nothing written
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_NE(r.err.find("map "), std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(out));
      ++refused_cases;
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string titles = shell_output(fmt::format(
        "ffprobe -v error -show_entries stream_tags=title -of csv=p=0 '{}' | grep .", out));
    std::string expect;
    for (const Track& t : kTracks)  // in the input's order
      if (want.count(t.title)) expect += t.title + "\n";
    EXPECT_EQ(titles, expect);
    ++kept_cases;
  }
  EXPECT_GT(kept_cases, 20);
  EXPECT_GT(refused_cases, 5);
  // A map that would choose nothing: audio none drops the audio it names, null writes no track.
  for (const std::string& args : {fmt::format("'{}' --map a:0 --audio none", path("none.mkv")),
                                  std::string("null --map s")}) {
    const auto r = run_vpipe(fmt::format("transcode '{}' {}", in, args));
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("map "), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(path("none.mkv")));
  // The video is not a track map chooses: refused with a word on why.
  const auto v = run_vpipe(fmt::format("transcode '{}' '{}' --map v:0", in, path("v.mkv")));
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("main video stream"), std::string::npos) << v.err;
}
