// LiveRegistry (what a metrics endpoint sees of running transcodes) and the
// Prometheus text made from it.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "transcode_metrics.hpp"
#include "vpipe/pipeline/session/live_stats.hpp"

namespace vpipe {
namespace {

LiveStats run(const std::string& stream, std::int64_t written) {
  LiveStats s;
  s.stream = stream;
  s.input = "in \"quoted\".mp4";
  s.output = "out.mp4";
  s.frames_written = written;
  s.elapsed_s = 2;
  s.queues = {{"decode→", 8, 3, 10, 0, 0, 5}};
  s.strategy = "pool";
  s.memory_peak = 1 << 20;
  return s;
}

TEST(LiveRegistry, ReadyOnlyWhenEveryRunHasAFrameOut) {
  LiveRegistry live;
  EXPECT_FALSE(live.ready()) << "no run yet: the inputs are not open";
  int a = 0, b = 0;
  std::int64_t written_b = 0;
  live.add(&a, [] { return run("1", 3); });
  live.add(&b, [&] { return run("2", written_b); });
  EXPECT_FALSE(live.ready()) << "stream 2 has no frame out";
  written_b = 1;
  EXPECT_TRUE(live.ready());
  EXPECT_EQ(live.sample().size(), 2u);
  live.remove(&a);
  live.remove(&b);
  EXPECT_FALSE(live.ready()) << "every run ended";
}

TEST(TranscodeMetrics, OneGroupPerFamilyWithEscapedLabels) {
  const std::string text = transcode_metrics_text({run("1", 10), run("2", 20)});
  EXPECT_NE(text.find("vpipe_frames_written_total{stream=\"2\",input=\"in "
                      "\\\"quoted\\\".mp4\",output=\"out.mp4\"} 20"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("vpipe_fps{stream=\"1\""), std::string::npos);
  EXPECT_NE(text.find("queue=\"decode→\"} 5"), std::string::npos) << "the queue's depth now";
  // The strategy two streams share appears once.
  std::size_t n = 0;
  for (auto at = text.find("vpipe_device_memory_peak_bytes{"); at != std::string::npos;
       at = text.find("vpipe_device_memory_peak_bytes{", at + 1))
    ++n;
  EXPECT_EQ(n, 1u);
  // Every sample line belongs to the family whose TYPE line came last, and no
  // family is declared twice.
  std::istringstream lines(text);
  std::string line, family;
  std::set<std::string> declared;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex("# TYPE (\\w+) (counter|gauge)"))) {
      family = m[1];
      EXPECT_TRUE(declared.insert(family).second) << family << " declared twice";
      continue;
    }
    if (line.starts_with("#")) continue;
    EXPECT_EQ(line.substr(0, line.find_first_of("{ ")), family) << line;
  }
  EXPECT_NE(text.find("vpipe_process_resident_memory_bytes "), std::string::npos);
}

}  // namespace
}  // namespace vpipe
