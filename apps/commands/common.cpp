#include "commands/common.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/parallel/gpu_placement.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/transcode_report.hpp"

namespace vpipe::cli {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto end = s.find(',', start);
    const auto item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

SchemaFlag schema_flag(std::string_view key) {
  const OptionSpec* row = find_option(key);
  if (!row) throw logic_error(fmt::format("no option '{}' in the schema", key));
  // A validator, not a callback that throws: CLI11 runs validators where nothing may throw.
  CLI::Validator check(
      [row](std::string& value) -> std::string {
        TranscodeOptions scratch;
        try {
          row->set(scratch, value);
        } catch (const usage_error& e) {
          return std::string(e.what()).substr(1);  // " pool2: expected one of …"
        }
        return {};
      },
      "", row->key);
  return {row->flag, row->value, check};
}

const CLI::Validator& positive_count() {
  static const CLI::Validator v(
      [](std::string& text) {
        char* end = nullptr;
        const long long n = std::strtoll(text.c_str(), &end, 10);
        return end != text.c_str() && *end == 0 && n >= 1
                   ? std::string()
                   : text + ": expected a whole number, 1 or more";
      },
      "N>=1");
  return v;
}

void add_metrics_options(CLI::App* app, MetricsEndpoint& endpoint) {
  app->add_option(
         "--metrics-port", endpoint.port,
         "serve Prometheus text at http://ADDRESS:PORT/metrics while running, and /healthz, "
         "/readyz (200 once every input is open and has a frame out) (0: off)")
      ->check(CLI::Range(0, 65535));
  app->add_option("--metrics-address", endpoint.address, "address the metrics endpoint listens on")
      ->capture_default_str();
}

void add_quick(CLI::App* bench, bool& quick) {
  bench->add_flag("--quick", quick,
                  "the smallest run of each kind of row (options given explicitly still hold): "
                  "a smoke run, not for results");
}

void parse_size(const std::string& text, const char* flag, int& width, int& height) {
  char tail = 0;
  if (std::sscanf(text.c_str(), "%dx%d%c", &width, &height, &tail) != 2 || width < 2 ||
      height < 2 || width > 16384 || height > 16384)
    throw vpipe::usage_error(
        fmt::format("{} {}: expected WxH from 2x2 to 16384x16384, e.g. 1920x1080", flag, text));
}

std::vector<int> gpus_of(const std::string& text) {
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  try {
    return vpipe::parse_gpus(text, visible);
  } catch (const vpipe::usage_error& e) {
    throw vpipe::usage_error(fmt::format("--gpus {}", e.what()));
  }
}

namespace {
std::atomic<bool> g_stdout_closed{false};
}  // namespace
void note_closed_stdout() { g_stdout_closed = true; }
bool stdout_was_closed() { return g_stdout_closed; }

void write_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  if (path == "-") {  // the standard output, as for a video output named "-"
    if (stdout_was_closed())
      throw vpipe::usage_error("--report -: the standard output is closed; give the report a file");
    std::cout << vpipe::json_text(j, 2) << '\n' << std::flush;
    if (!std::cout)  // a full disk or a reader gone: the report did not arrive
      throw vpipe::input_error(
          "--report -: the report could not be written to the standard output");
    return;
  }
  vpipe::write_file(path, vpipe::json_text(j, 2) + '\n', "report");
}

namespace {
std::atomic<int> g_signal{0};

// First SIGINT/SIGTERM/SIGHUP (a closed terminal): stop gracefully (the output is
// finalized; vpipe run takes SIGHUP back for re-reading its config). Second:
// leave now, removing the unfinished outputs (written beside their targets, which
// stay as they were), which would not play, unless --keep-partial; one line each.
extern "C" void on_signal(int sig) {
  if (g_signal.load() != 0) {
    if (vpipe::remove_partial_outputs_now() == 0) {
      const char line[] =
          "vpipe: stopped at once (second signal): unfinished outputs left under their "
          "temporary names, NAME.vpipe-partial-PID.EXT (--keep-partial), or none begun; the "
          "files already at the output paths are untouched\n";
      (void)!write(STDERR_FILENO, line, sizeof line - 1);
    }
    std::_Exit(128 + sig);
  }
  g_signal.store(sig);
}
extern "C" void on_wake(int) {}  // SIGURG: only breaks a blocking read (DemuxSource::wake)
}  // namespace

std::atomic<int>& stop_signal() { return g_signal; }

// Without SA_RESTART: a signal makes a blocking open or read return EINTR,
// and the input's interrupt callback then ends it (a FIFO with no writer).
void install_stop_signals() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  sa.sa_handler = on_wake;
  sigaction(SIGURG, &sa, nullptr);
}

int signal_exit_status() { return g_signal.load() ? 128 + g_signal.load() : 0; }

}  // namespace vpipe::cli
