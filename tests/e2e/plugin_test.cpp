// Custom filters: the example plugin (examples/vignette) loads by itself from
// vpipe's plugin directory, lists, runs in a chain, and bad plugins fail
// cleanly. The README's how-to shows the example's files verbatim.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>

#include "media_check.hpp"
#include "vpipe/pipeline/filters/filter.hpp"

using namespace vpipe;
using namespace vpipe::test;
namespace fs = std::filesystem;

namespace {
std::string plugin_path() {
  return (fs::path(kBin).parent_path() / "plugins" / "vignette.so").string();
}
std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST(Plugin, ExampleIsListedWithItsContract) {
  if (std::getenv("VPIPE_PLUGIN_DIR"))
    GTEST_SKIP() << "VPIPE_PLUGIN_DIR overrides the default directory";
  const auto r = run_vpipe("filters");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.find("vignette\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("formats: yuv420p, nv12; CUDA: yes", at), std::string::npos);
  EXPECT_NE(r.out.find("strength", at), std::string::npos);
}

TEST(Plugin, VignetteInAChainDarkensCornersNotTheCentre) {
  const auto dir = fs::temp_directory_path() / ("vpipe_plugin_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto plain = (dir / "plain.mkv").string(), vig = (dir / "vig.mkv").string();
  const std::string common = " --device cpu --encoder ffv1 --frames 5";
  ASSERT_EQ(
      run_vpipe("transcode " + kSample + " " + plain + common + " --vf resize=640x360").exit_code,
      0);
  const auto r = run_vpipe("transcode " + kSample + " " + vig + common +
                           " --vf \"resize=640x360,vignette=strength=0.8\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Frame> a, b;
  for_each_frame(plain, [&](const Frame& f) { a.push_back(f); });
  for_each_frame(vig, [&](const Frame& f) { b.push_back(f); });
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  long corner_a = 0, corner_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto &ya = a[i].planes[0], &yb = b[i].planes[0];
    EXPECT_NEAR(yb.row(180)[320], ya.row(180)[320], 1) << "the centre keeps its brightness";
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) {
        corner_a += ya.row(y)[x];
        corner_b += yb.row(y)[x];
        // gain at the corner is 1 - 0.8 * ~0.98
        EXPECT_NEAR(yb.row(y)[x],
                    ya.row(y)[x] * (1 - 0.8 * 2 *
                                            ((0.5 - (x + 0.5) / 640) * (0.5 - (x + 0.5) / 640) +
                                             (0.5 - (y + 0.5) / 360) * (0.5 - (y + 0.5) / 360))),
                    1.0);
      }
    // Chroma is untouched.
    EXPECT_EQ(std::memcmp(a[i].planes[1].row(0), b[i].planes[1].row(0), a[i].planes[1].row_bytes()),
              0);
  }
  EXPECT_LT(corner_b * 3, corner_a) << "corners at under a third of their brightness";
  fs::remove_all(dir);
}

TEST(Plugin, BadPluginsFailCleanly) {
  const auto missing = run_vpipe("--plugin /nonexistent/libnothing.so filters");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("cannot load plugin '/nonexistent/libnothing.so'"), std::string::npos)
      << missing.err;
  const auto text = fs::temp_directory_path() / "vpipe_not_a_plugin.so";
  std::ofstream(text) << "not an ELF file";
  const auto bad = run_vpipe("--plugin " + text.string() + " filters");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("cannot load plugin"), std::string::npos) << bad.err;
  fs::remove(text);
  if (!std::getenv("VPIPE_PLUGIN_DIR")) {  // a copy of the example: the same filter name again
    const auto copy =
        fs::temp_directory_path() / ("vpipe_dup_" + std::to_string(::getpid()) + ".so");
    fs::copy_file(plugin_path(), copy, fs::copy_options::overwrite_existing);
    const auto dup = run_vpipe("--plugin " + copy.string() + " filters");
    fs::remove(copy);
    EXPECT_EQ(dup.exit_code, 1);
    EXPECT_NE(dup.err.find("filter 'vignette' is registered twice"), std::string::npos) << dup.err;
  }
}

// A plugin compiled against another plugin interface (VPIPE_PLUGIN_ABI), or against an older
// vpipe whose functions this one lacks, is refused by name with what to do, and no filter of it
// is registered: its Filter's virtual functions need not be where this vpipe calls them.
TEST(Plugin, APluginOfAnotherInterfaceIsRefusedWithWhatToDo) {
  const auto dir = fs::path(kBin).parent_path() / "test-plugins";
  const auto other = run_vpipe("--plugin " + (dir / "other_interface.so").string() + " filters");
  EXPECT_EQ(other.exit_code, 1) << other.out;
  EXPECT_NE(other.err.find("compiled against vpipe's plugin interface 0, and this vpipe's is " +
                           std::to_string(VPIPE_PLUGIN_ABI) + ": rebuild it"),
            std::string::npos)
      << other.err;
  EXPECT_EQ(other.err.find("registered no filter"), std::string::npos) << other.err;
  EXPECT_EQ(other.out.find("other_interface_test"), std::string::npos) << other.out;

  // In the plugin directory, one stale file is skipped with the same words; the others load.
  const auto plugins = fs::temp_directory_path() / ("vpipe_stale_" + std::to_string(::getpid()));
  fs::create_directories(plugins);
  fs::copy_file(dir / "other_interface.so", plugins / "other_interface.so");
  fs::copy_file(plugin_path(), plugins / "vignette.so");
  const auto skipped = run_vpipe("filters", "VPIPE_PLUGIN_DIR=" + plugins.string());
  fs::remove_all(plugins);
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_NE(skipped.out.find("vignette\n"), std::string::npos) << skipped.out;
  EXPECT_NE(skipped.err.find("plugin interface 0"), std::string::npos) << skipped.err;
  EXPECT_NE(skipped.err.find("skipped"), std::string::npos) << skipped.err;

  const auto older = run_vpipe("--plugin " + (dir / "older_vpipe.so").string() + " filters");
  EXPECT_EQ(older.exit_code, 1) << older.out;
  EXPECT_NE(older.err.find("this vpipe has no vpipe::register_as_an_older_vpipe_did(int): the "
                           "plugin was built against another vpipe's headers; rebuild it"),
            std::string::npos)
      << older.err;
}

// The plugin walk-through's "build and run" (issue #40): the user's own build of the
// example, named like the installed one and given as a bare file name in the current
// folder, is the one loaded: no "registered twice", no "No such file".
TEST(Plugin, YourOwnBuildInTheCurrentFolderWinsOverTheInstalledOne) {
  if (std::getenv("VPIPE_PLUGIN_DIR")) GTEST_SKIP() << "VPIPE_PLUGIN_DIR overrides the default";
  const auto dir = fs::temp_directory_path() / ("vpipe_own_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(plugin_path(), dir / "vignette.so", fs::copy_options::overwrite_existing);
  const auto r = run_vpipe("--plugin vignette.so filters", "cd " + dir.string() + " &&");
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vignette"), std::string::npos) << r.out;
}

TEST(Plugin, ReadmeHowToShowsTheExampleVerbatim) {
  const fs::path src = env_or("VPIPE_SOURCE_DIR", kBuiltinSourceDir);
  const auto readme = slurp(src / "examples" / "vignette" / "README.md");
  for (const char* file :
       {"vignette.cpp", "vignette_kernel.hpp", "vignette_kernel.cu", "CMakeLists.txt"}) {
    const auto body = slurp(src / "examples" / "vignette" / file);
    ASSERT_FALSE(body.empty()) << file;
    EXPECT_NE(readme.find(body), std::string::npos)
        << "examples/vignette/README.md must show examples/vignette/" << file
        << " verbatim (it is what the tests build)";
  }
}
