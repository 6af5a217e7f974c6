#include "commands/cli.hpp"

#include <fmt/format.h>

#include <map>

#include "commands/exit_codes.hpp"

namespace vpipe::cli {

#define VPIPE_COMMAND(make) std::unique_ptr<Command> make();
#include "commands/commands.def"
#undef VPIPE_COMMAND

namespace {
std::vector<std::unique_ptr<Command>> every_command() {
  std::vector<std::unique_ptr<Command>> out;
#define VPIPE_COMMAND(make) out.push_back(make());
#include "commands/commands.def"
#undef VPIPE_COMMAND
  return out;
}
}  // namespace

Cli::Cli() : commands_(every_command()) {
  app.name("vpipe");  // --help says "vpipe", whatever path started it (docs/CLI.md is its help)
  app.require_subcommand(1);
  app.add_flag("-v,--verbose", verbose, "log FFmpeg warnings and debug detail");
  app.add_option("--plugin", plugins,
                 "load a filter plugin (.so built with vpipe_add_filter_plugin; repeatable). "
                 "Plugins in $VPIPE_PLUGIN_DIR, else in <vpipe's dir>/plugins and "
                 "<vpipe's dir>/../lib/vpipe/plugins, load by themselves");
  std::map<std::string_view, CLI::App*> groups;  // a group's name → its app
  for (const auto& c : commands_) {
    CLI::App* parent = c->parent().empty() ? &app : groups.at(c->parent());
    apps_.push_back(c->add(*parent));
    if (c->parent().empty()) groups[apps_.back()->get_name()] = apps_.back();
  }
  // After the commands: a subcommand takes its parent's footer when it is made.
  app.footer(
      "Examples:\n"
      "  vpipe transcode media/sample-720p.mp4 out.mp4 --vf \"resize=640x360,blur=sigma=1.5\"\n"
      "  vpipe transcode in.mp4 out.mp4 --vf \"resize=1280x720,blur=sigma=1.5\" --mem pool --host "
      "pinned\n"
      "  vpipe transcode in.mkv out.mkv --encoder ffv1 --report report.json\n"
      "  vpipe transcode in.mp4 null --decode nvdec --vf resize=1280x720 --loop 10   (measure, "
      "write nothing)\n"
      "  vpipe transcode udp://127.0.0.1:5000 live.mp4 --vf resize=1280x720   (live MPEG-TS in)\n"
      "  vpipe transcode in.mp4 udp://127.0.0.1:5002 --realtime   (MPEG-TS over UDP out, paced)\n"
      "  vpipe transcode in.mp4 null --realtime --streams 8 --mem slab   (8 paced feeds, one GPU)\n"
      "  vpipe bench pipeline in-1080p.mp4 --loop 8\n"
      "  vpipe bench decode in-1080p.mp4 --sessions 1,7,14 --streams 7,14,28\n"
      "  vpipe bench encode in-1080p.mp4 --vf resize=1280x720 --segments 1,2,4,8\n"
      "  vpipe run fleet.yaml --metrics-port 9464   (many feeds, restarts, SIGHUP reloads)\n"
      "  vpipe filters\n"
      "  vpipe info\n\n" +
      exit_code_help());
}

Command& Cli::chosen() const {
  for (std::size_t i = commands_.size(); i-- > 0;)  // a group's commands come after it
    if (apps_[i]->parsed()) return *commands_[i];
  throw std::logic_error("vpipe: no command was parsed");
}

}  // namespace vpipe::cli
