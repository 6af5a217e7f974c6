#include "vpipe/pipeline/io/dash.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/paths.hpp"

namespace vpipe {

namespace fs = std::filesystem;

namespace {

// The elements named `tag` in `text`, each from "<tag" to its "</tag>".
std::vector<std::string> elements(const std::string& text, const std::string& tag) {
  std::vector<std::string> out;
  const std::string open = "<" + tag, close = "</" + tag + ">";
  for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const auto end = text.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(text.substr(at, end + close.size() - at));
    at = end + close.size();
  }
  return out;
}

// The value of attribute `name` in the opening tag of `element` ("" if none).
std::string attribute(const std::string& element, const std::string& name) {
  const auto tag_end = element.find('>');
  const auto at = element.find(" " + name + "=\"");
  if (at == std::string::npos || at > tag_end) return "";
  const auto from = at + name.size() + 3;
  return element.substr(from, element.find('"', from) - from);
}

// `element` with attribute `name` set to `value` in its opening tag, or removed (`remove`).
std::string with_attribute(std::string element, const std::string& name, const std::string& value,
                           bool remove = false) {
  const auto tag_end = element.find('>');
  const auto at = element.find(" " + name + "=\"");
  if (at == std::string::npos || at > tag_end) return element;
  const auto end = element.find('"', at + name.size() + 3) + 1;
  element.replace(at, end - at, remove ? "" : fmt::format(" {}=\"{}\"", name, value));
  return element;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// A Representation of rendition `name` as the master lists it: its own id
// becomes `id`, and its segment names point into the rendition's folder.
std::string moved(std::string rep, const std::string& name, const std::string& id) {
  const std::string own = attribute(rep, "id");
  rep = with_attribute(rep, "id", id);
  replace_all(rep, "$RepresentationID$", own);
  replace_all(rep, "initialization=\"", "initialization=\"" + name + "/");
  replace_all(rep, "media=\"", "media=\"" + name + "/");
  return rep;
}

std::string read_manifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw input_error(fmt::format("{}: cannot read the rendition's manifest", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string merge_dash_manifests(const std::vector<DashRendition>& renditions) {
  std::string head, video_set, reps, audio;
  for (const auto& r : renditions) {
    const std::string text = read_manifest(r.manifest);
    const auto period = text.find("<Period");
    if (head.empty() && period != std::string::npos)
      head = text.substr(0, text.find('>', period) + 1);
    bool video = false;
    for (const auto& set : elements(text, "AdaptationSet")) {
      const std::string kind = attribute(set, "contentType");
      const auto rep = elements(set, "Representation");
      if (kind == "video" && !rep.empty()) {
        video = true;
        if (video_set.empty()) video_set = set.substr(0, set.find('>') + 1);
        reps += "\n\t\t\t" + moved(rep.front(), r.name, r.name);
      } else if (kind == "audio" && !rep.empty() && audio.empty()) {
        audio = "\n\t\t" + set.substr(0, set.find('>') + 1) + "\n\t\t\t" +
                moved(rep.front(), r.name, r.name + "-audio") + "\n\t\t</AdaptationSet>";
      }
    }
    if (!video)
      throw input_error(fmt::format("{}: no video in the rendition's manifest", r.manifest));
  }
  // One set of renditions with their own sizes and encoders: no one size, no switching
  // of bitstreams without a new initialization segment.
  for (const char* size : {"maxWidth", "maxHeight", "par"})
    video_set = with_attribute(video_set, size, "", true);
  video_set = with_attribute(video_set, "bitstreamSwitching", "false");
  return head + "\n\t\t" + video_set + reps + "\n\t\t</AdaptationSet>" + audio +
         "\n\t</Period>\n</MPD>\n";
}

void write_dash_master(const std::string& dir, const std::vector<DashRendition>& renditions) {
  write_file((fs::path(dir) / "manifest.mpd").string(), merge_dash_manifests(renditions),
             "the DASH ladder's manifest");
}

void remove_dash_rendition(const std::string& manifest) noexcept {
  remove_with_siblings(manifest, [](const std::string& name) {
    const bool ours = name.rfind("init-stream", 0) == 0 || name.rfind("chunk-stream", 0) == 0;
    return ours && fs::path(name).extension() == ".m4s";
  });
}

}  // namespace vpipe
