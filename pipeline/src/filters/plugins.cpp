#include <cxxabi.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe {
namespace {

// dlerror's text, and where it names a vpipe function this program does not have, that function
// and the likely cause: a plugin built against another vpipe's headers (one older than the
// VPIPE_PLUGIN_ABI check, or of a vpipe whose functions changed).
std::string explain_load_error(const std::string& err) {
  const std::string marker = "undefined symbol: ";
  const auto at = err.find(marker);
  if (at == std::string::npos) return err;
  const std::string symbol = err.substr(at + marker.size());
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
  const std::string readable = status == 0 && name ? name.get() : symbol;
  if (readable.find("vpipe::") == std::string::npos) return err;
  return fmt::format(
      "{}\n  this vpipe has no {}: the plugin was built against another vpipe's headers; "
      "rebuild it against this vpipe's (find_package(vpipe) with this vpipe's prefix)",
      err, readable);
}

}  // namespace

void load_filter_plugin(const std::string& path) {
  auto& registry = FilterRegistry::instance();  // built-ins first, so duplicates are caught
  (void)registry.take_errors();
  if (path.empty()) throw usage_error("plugin \"\": expected the path of a plugin (.so)");
  static std::set<void*> plugins;  // handles of the plugins loaded so far
  const std::size_t before = registry.names().size();
  // RTLD_GLOBAL is not needed: plugins resolve vpipe's symbols from the program.
  // dlopen searches the library path for a name without a '/': a plugin in the
  // current folder ("--plugin name.so") is opened as the file it names.
  std::error_code ec;
  const std::string file =
      path.find('/') == std::string::npos && std::filesystem::exists(path, ec) ? "./" + path : path;
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    throw logic_error(fmt::format("cannot load plugin '{}': {}", path,
                                  explain_load_error(err ? err : "unknown error")));
  }
  // The handle is kept for the process's life: its filters stay registered.
  if (!plugins.insert(handle).second) return;  // loaded before (a plugin directory and --plugin)
  if (auto errors = registry.take_errors(); !errors.empty()) {
    // One error per filter: a plugin of another interface says so once.
    errors.erase(std::unique(errors.begin(), errors.end()), errors.end());
    throw logic_error(fmt::format("plugin '{}': {}", path, fmt::join(errors, "; ")));
  }
  // A library that loads but registers nothing is not a plugin (a typo'd
  // path to libz would otherwise pass in silence).
  if (registry.names().size() == before)
    throw input_error(
        fmt::format("plugin '{}' registered no filter (is it built with "
                    "vpipe_add_filter_plugin and VPIPE_REGISTER_FILTER?)",
                    path));
}

std::vector<std::string> load_filter_plugins_from(const std::string& dir,
                                                  const std::vector<std::string>& left_out) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".so" &&
        std::find(left_out.begin(), left_out.end(), e.path().filename().string()) == left_out.end())
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  // A plugin of the directory that cannot load (built against another vpipe, a duplicate) is
  // skipped with a warning, as GStreamer's registry skips one: one stale file must not stop
  // every command. A plugin named with --plugin fails the run (load_filter_plugin).
  std::vector<std::string> loaded;
  for (const auto& f : files) {
    try {
      load_filter_plugin(f);
      loaded.push_back(f);
    } catch (const std::exception& e) {
      spdlog::warn("{} (from the plugin directory {}: skipped)", e.what(), dir);
    }
  }
  return loaded;
}

}  // namespace vpipe
