#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe {

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
    throw logic_error(
        fmt::format("cannot load plugin '{}': {}", path, err ? err : "unknown error"));
  }
  // The handle is kept for the process's life: its filters stay registered.
  if (!plugins.insert(handle).second) return;  // loaded before (a plugin directory and --plugin)
  if (auto errors = registry.take_errors(); !errors.empty())
    throw logic_error(fmt::format("plugin '{}': {}", path, fmt::join(errors, "; ")));
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
  for (const auto& f : files) load_filter_plugin(f);
  return files;
}

}  // namespace vpipe
