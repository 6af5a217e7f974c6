// The plugin interface's fingerprint: a plugin is compiled against filter.hpp and every vpipe
// header it includes, and vpipe refuses one of another VPIPE_PLUGIN_ABI. A change to those
// headers that moves what a compiled plugin relies on must raise that number; this test makes
// every such change a decision, not an accident.
#include <gtest/gtest.h>

extern "C" {
#include <libavutil/hash.h>
}

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe::test {
extern const char* const kBuiltinSourceDir;
}

namespace {
namespace fs = std::filesystem;

// Updated with VPIPE_PLUGIN_ABI, as the failure below says. (Last: ColorSpec, which
// Filter::colour takes and returns, gained the chroma siting (#79 item 3): 3. errors.hpp's move
// to vpipe/base changed the text, not the binary: the same number. Lines of comment alone no
// longer count as lines: the same number. Then Filter gained rate_change, a virtual function
// (fps=, #79 item 5), and Frame its duration: 4.)
constexpr int kRecordedAbi = 4;
constexpr const char* kRecordedHeaders =
    "7851282875fb594845390dea3561ce306e19bd7471199e0d009bf7cf4cb09be5";

fs::path source_dir() {
  const char* env = std::getenv("VPIPE_SOURCE_DIR");
  return env ? env : vpipe::test::kBuiltinSourceDir;
}

// "vpipe/base/errors.hpp" → the file, in whichever library's include folder holds it.
fs::path header_file(const std::string& include) {
  for (const char* lib : {"base", "memory", "kernels", "pipeline"}) {
    const auto p = source_dir() / lib / "include" / include;
    if (fs::exists(p)) return p;
  }
  ADD_FAILURE() << "no library holds " << include;
  return {};
}

// The text a compiler sees, less comments and the spacing between tokens.
std::string code_of(const fs::path& file) {
  std::ifstream in(file);
  std::string line, out;
  while (std::getline(in, line)) {
    if (const auto c = line.find("//"); c != std::string::npos) line.erase(c);
    std::istringstream words(line);
    std::string code;
    for (std::string w; words >> w;) code += w + ' ';
    if (!code.empty()) out += code + '\n';  // a line of comment alone is no line of code
  }
  return out;
}

// filter.hpp and every vpipe header it includes, transitively, in a fixed order.
std::set<std::string> plugin_headers() {
  std::set<std::string> seen;
  std::vector<std::string> todo{"vpipe/pipeline/filters/filter.hpp"};
  const std::regex include(R"re(#include "(vpipe/[^"]+)")re");
  while (!todo.empty()) {
    const auto name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    std::ifstream in(header_file(name));
    for (std::string line; std::getline(in, line);)
      if (std::smatch m; std::regex_search(line, m, include)) todo.push_back(m[1]);
  }
  return seen;
}

std::string sha256_hex(const std::string& text) {
  AVHashContext* ctx = nullptr;
  if (av_hash_alloc(&ctx, "SHA256") < 0) return {};
  av_hash_init(ctx);
  av_hash_update(ctx, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  char hex[2 * AV_HASH_MAX_SIZE + 1] = {};
  av_hash_final_hex(ctx, reinterpret_cast<uint8_t*>(hex), sizeof hex);
  av_hash_freep(&ctx);
  return hex;
}

}  // namespace

TEST(PluginAbi, TheHeadersAPluginCompilesAgainstAreTheOnesItsNumberNames) {
  const auto headers = plugin_headers();
  ASSERT_GE(headers.size(), 4u) << "filter.hpp includes frame.hpp, color.hpp and errors.hpp";
  std::string code, names;
  for (const auto& h : headers) {
    code += h + '\n' + code_of(header_file(h));
    names += "\n  " + h;
  }
  const auto sha = sha256_hex(code);
  ASSERT_EQ(sha.size(), 64u);
  EXPECT_EQ(VPIPE_PLUGIN_ABI, kRecordedAbi);
  EXPECT_EQ(sha, kRecordedHeaders)
      << "The code of the headers a filter plugin compiles against changed:" << names
      << "\nIf the change moves anything a plugin already compiled relies on (a virtual function "
         "of Filter, added, removed or reordered; a member of FilterInfo, ParamSpec, Frame or "
         "another struct it uses; what an inline function does), raise VPIPE_PLUGIN_ABI in "
         "filter.hpp, so vpipe refuses those plugins by name instead of calling into them. Then "
         "record the number and this fingerprint in plugin_abi_test.cpp: "
      << sha;
}

// The fingerprint sees code, not comments or spacing: a comment added to a header is no change
// to the interface.
TEST(PluginAbi, CommentsAndSpacingAreNotTheInterface) {
  const auto dir = fs::temp_directory_path() / ("vpipe_abi_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.hpp") << "struct A {\n  int x;  // the width\n};\n";
  std::ofstream(dir / "b.hpp") << "// A: one member\nstruct A {\n\n    int   x;\n};\n";
  std::ofstream(dir / "c.hpp") << "struct A {\n  long x;\n};\n";
  EXPECT_EQ(code_of(dir / "a.hpp"), code_of(dir / "b.hpp"));
  EXPECT_NE(code_of(dir / "a.hpp"), code_of(dir / "c.hpp"));
  fs::remove_all(dir);
}
