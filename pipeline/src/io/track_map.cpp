#include "vpipe/pipeline/io/track_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "vpipe/base/errors.hpp"

namespace vpipe {

TrackSelector parse_track_selector(std::string_view text) {
  static const std::regex form("^(?:0:)?([as])(?::([0-9]{1,3})|:([A-Za-z]{2,3}))?$");
  const std::string s(text);
  std::smatch m;
  if (!std::regex_match(s, m, form)) {
    const bool video = !s.empty() && (s[0] == 'v' || s.rfind("0:v", 0) == 0);
    throw usage_error(fmt::format(
        " {}: {}expected a (every audio track), a:N (the Nth, from 0), a:LANG (by language, "
        "e.g. a:eng), or s, s:N, s:LANG for subtitles",
        s,
        video ? "the video is the input's main video stream; map chooses audio and subtitle "
                "tracks: "
              : ""));
  }
  TrackSelector t;
  t.type = m[1] == "a" ? AVMEDIA_TYPE_AUDIO : AVMEDIA_TYPE_SUBTITLE;
  if (m[2].matched) t.index = std::stoi(m[2]);
  if (m[3].matched) t.language = m[3];
  t.text = s;
  return t;
}

bool selects(const TrackSelector& t, const AVStream* s, int nth_of_type) {
  if (s->codecpar->codec_type != t.type) return false;
  if (t.index) return *t.index == nth_of_type;
  if (t.language.empty()) return true;
  // Tags are written in either case (ENG, eng); a track without one is und (undetermined).
  const AVDictionaryEntry* tag = av_dict_get(s->metadata, "language", nullptr, 0);
  const std::string lang = tag ? tag->value : "und";
  return lang.size() == t.language.size() &&
         std::equal(lang.begin(), lang.end(), t.language.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

TrackMap::TrackMap(const std::vector<std::string>& maps) {
  for (const auto& m : maps) selectors_.push_back(parse_track_selector(m));
  matched_.assign(selectors_.size(), false);
}

bool TrackMap::keeps(const AVStream* s) {
  const AVMediaType type = s->codecpar->codec_type;
  if (type != AVMEDIA_TYPE_AUDIO && type != AVMEDIA_TYPE_SUBTITLE) return true;
  const int nth = type == AVMEDIA_TYPE_AUDIO ? audio_++ : subtitles_++;
  if (selectors_.empty()) return true;
  bool kept = false;
  for (std::size_t k = 0; k < selectors_.size(); ++k)
    if (selects(selectors_[k], s, nth)) kept = matched_[k] = true;
  return kept;
}

std::string TrackMap::describe(const AVStream* s) {
  const char* media = av_get_media_type_string(s->codecpar->codec_type);
  const AVDictionaryEntry* lang = av_dict_get(s->metadata, "language", nullptr, 0);
  return fmt::format("{}{}{}", media ? media : "unknown", lang ? ", " : "",
                     lang ? lang->value : "");
}

void TrackMap::check_each_matched(const std::string& input) const {
  for (std::size_t k = 0; k < selectors_.size(); ++k) {
    if (matched_[k]) continue;
    const bool audio = selectors_[k].type == AVMEDIA_TYPE_AUDIO;
    const int have = audio ? audio_ : subtitles_;
    throw usage_error(fmt::format("map {}: {} has {} {} track{}{}", selectors_[k].text, input, have,
                                  audio ? "audio" : "subtitle", have == 1 ? "" : "s",
                                  selectors_[k].language.empty()
                                      ? std::string()
                                      : fmt::format(", none in {}", selectors_[k].language)));
  }
}

}  // namespace vpipe
