// vpipe: the command-line front of the framework. main() parses the command
// line (commands/cli.hpp), loads plugins and runs the command chosen; each
// subcommand is a file under apps/commands/ (commands.def lists them; `vpipe
// --help` and docs/OPTIONS.md show their options).
//
// transcode's data flow (each box a thread, each arrow a bounded queue):
//
//   demux ─► decode ─► [upload ─► CUDA filter … ─► download] ─► encode ─► mux ─► OUT
//     └─────── audio, subtitles: copied ─────────────────────────────────┘
//   (the CPU path runs the filters on the CPU instead of the bracketed part;
//    with NVDEC, decode hands device frames to the first CUDA filter: no upload)
//
// Exit status: 0 done, 1 error (one line on stderr naming the file and the
// cause; no partial output left), 2 usage, 3 soak verdict failed, 4 completed
// with N errors (damaged input: frames concealed or dropped, counted; the
// output is complete), 129/130/143 interrupted by SIGHUP/SIGINT/SIGTERM (the output is
// finalized and playable).
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

extern "C" {
#include <libavutil/log.h>
}

#include "commands/cli.hpp"
#include "commands/common.hpp"
#include "commands/exit_codes.hpp"
#include "vpipe/base/crash_trace.hpp"
#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"

namespace {

// Plugins: the default directories (or $VPIPE_PLUGIN_DIR; empty: none), then --plugin.
// A --plugin file wins over a default one of the same file name (the user's own build).
void load_plugins(const std::vector<std::string>& explicit_plugins) {
  namespace fs = std::filesystem;
  std::vector<std::string> named;
  for (const auto& p : explicit_plugins) named.push_back(fs::path(p).filename().string());
  if (const char* dir = std::getenv("VPIPE_PLUGIN_DIR")) {
    vpipe::load_filter_plugins_from(dir, named);
  } else {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
    if (!ec) {
      vpipe::load_filter_plugins_from((exe / "plugins").string(), named);
      vpipe::load_filter_plugins_from((exe / ".." / "lib" / "vpipe" / "plugins").string(), named);
    }
  }
  for (const auto& p : explicit_plugins) vpipe::load_filter_plugin(p);
}

// The first word that is not an option must be a command: name the one typed
// when it is not ("A subcommand is required" does not say which word was wrong).
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--plugin") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      if (sub->check_name(a)) return {};
    std::string names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    return fmt::format("unknown command '{}' (commands: {}; see vpipe --help)", a, names);
  }
  return {};
}

// FFmpeg's tool's flags, answered with vpipe's names: the schema's FFmpeg spellings, and the
// FFmpeg flags that are no option here with what to do instead.
std::string ffmpeg_hint(std::string_view a) {
  static const std::pair<std::string_view, std::string_view> kNotOptions[] = {
      {"-i", "give IN as the first argument: vpipe transcode IN OUT"},
      {"-y", "not needed: vpipe replaces OUT when the run succeeds (a failed run keeps it)"},
      {"-n", "not built: vpipe replaces OUT when the run succeeds"},
      {"-an", "--audio none"},
      {"-vn", "not built: vpipe writes video (--audio none leaves audio out)"},
      {"-sn",
       "--map to choose tracks (subtitles are kept by default, converted where the "
       "container needs it)"},
      {"-f", "vpipe picks the container from OUT's extension"},
      {"-s", "--vf resize=WIDTHxHEIGHT"},
      {"-r", "--vf fps=N (frames dropped or repeated as FFmpeg's fps filter does)"},
      {"-c",
       "--encoder for video (--encoder copy copies it), --audio-codec for audio (--audio "
       "copy copies it)"},
      {"-ab", "--audio-bitrate"},
      {"-tune", "--encoder-option tune=VALUE"},
      {"-x264-params", "--encoder-option x264-params=K=V:K=V"},
      {"-x265-params", "--encoder-option x265-params=K=V:K=V"},
      {"-hwaccel", "--decode nvdec (--device cuda runs the filters on the GPU)"},
      {"-hide_banner", "not needed: vpipe prints no banner"},
      {"-loglevel", "-v / --verbose shows FFmpeg's warnings"},
      {"-nostdin", "not needed: vpipe reads no keys from the standard input"},
  };
  if (const auto* row = vpipe::find_ffmpeg_spelling(a))
    return fmt::format("vpipe: {} is FFmpeg's; vpipe's is {} ({})\n", a, row->flag,
                       row->value.empty() ? "a switch" : row->value);
  for (const auto& [flag, instead] : kNotOptions)
    if (a == flag) return fmt::format("vpipe: {} is FFmpeg's; in vpipe: {}\n", a, instead);
  return {};
}

std::string ffmpeg_hints(int argc, char** argv) {
  std::string hints;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.size() >= 2 && a[0] == '-' && a[1] != '-') hints += ffmpeg_hint(a);
  }
  return hints;
}

// A word CLI11 would read as vpipe's short flags run together: -hide_banner as -h (help, exit
// 0, nothing done), -vh. vpipe's short flags are -h and -v alone; a longer word after one
// dash beginning with either is FFmpeg's spelling of something, or nothing vpipe has.
std::string folded_short_flags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.size() > 2 && a[0] == '-' && (a[1] == 'h' || a[1] == 'v') && std::isalpha(a[2]))
      return std::string(a);
  }
  return {};
}

// A closed stdin, stdout or stderr (`2>&-`, a daemon's launcher) becomes
// /dev/null: messages then go nowhere instead of aborting the run at its last
// line (fmt throws on a closed stream), and no output file is opened as fd 2,
// where every later message would be written into the video.
void open_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      if (fd == 1) vpipe::cli::note_closed_stdout();
      const int null = ::open("/dev/null", O_RDWR);  // the lowest free descriptor: fd
      if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
      }
    }
}

}  // namespace

// "vpipe: error: …" on stderr, never throwing: with stderr full (2>/dev/full) the message is
// lost, not turned into an abort inside the handler that reports the first error.
void say_error(const std::string& why) noexcept {
  const std::string line = "vpipe: error: " + why + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

int main(int argc, char** argv) {
  open_standard_fds();
  vpipe::install_crash_trace("vpipe");
  vpipe::cli::Cli c;
  if (const auto why = unknown_command(c.app, argc, argv); !why.empty()) {
    fmt::print(stderr, "vpipe: error: {}\n", why);
    return vpipe::cli::kUsage;
  }
  if (const auto word = folded_short_flags(argc, argv); !word.empty()) {
    fmt::print(stderr, "{}", ffmpeg_hints(argc, argv));
    fmt::print(stderr,
               "vpipe: error: {}: no such option (vpipe's options are --long; see {} --help)\n",
               word, "vpipe");
    return vpipe::cli::kUsage;
  }
  try {
    c.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = c.app.exit(e);  // prints help, or the usage error
    if (rc != 0) fmt::print(stderr, "{}", ffmpeg_hints(argc, argv));
    return rc == 0 ? vpipe::cli::kDone : vpipe::cli::kUsage;
  }
  av_log_set_level(c.verbose ? AV_LOG_WARNING : AV_LOG_QUIET);
  spdlog::set_default_logger(spdlog::stderr_color_mt("vpipe"));  // stdout is for results
  spdlog::set_level(c.verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_pattern("vpipe: %l: %v");

  try {
    load_plugins(c.plugins);
    c.finish();
    return c.chosen().run();
  } catch (const vpipe::usage_error& e) {  // a bad option value: like CLI11's own checks
    say_error(e.what());
    return vpipe::cli::kUsage;
  } catch (const vpipe::chain_error& e) {  // bad --vf text
    say_error(e.what());
    return vpipe::cli::kUsage;
  } catch (const std::exception& e) {
    if (isatty(STDERR_FILENO)) (void)!::write(STDERR_FILENO, "\n", 1);
    say_error(e.what());
    const int stopped = vpipe::cli::signal_exit_status();  // Ctrl-C ended a wait: "interrupted"
    return stopped ? stopped : vpipe::cli::kFailed;
  }
}
