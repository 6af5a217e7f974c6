#include "vpipe/pipeline/transcode_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace vpipe {
namespace {

template <class T>
T number(const std::string& text, T lo, T hi) {
  T v{};
  const auto* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end)
    throw usage_error(fmt::format(" {}: not a number", text));
  if (v < lo || v > hi) throw usage_error(fmt::format(" {}: outside {}..{}", text, lo, hi));
  return v;
}

bool boolean(const std::string& text) {
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no") return false;
  throw usage_error(fmt::format(" {}: expected true or false", text));
}

using Setter = std::function<void(TranscodeOptions&, const std::string&)>;

template <class M>
Setter text(M TranscodeOptions::*m) {
  return [m](TranscodeOptions& o, const std::string& v) { o.*m = v; };
}
template <class E>
Setter named(E TranscodeOptions::*m) {
  return [m](TranscodeOptions& o, const std::string& v) { o.*m = from_name<E>(v, ""); };
}
template <class N>
Setter count(N TranscodeOptions::*m, N lo, N hi) {
  return [m, lo, hi](TranscodeOptions& o, const std::string& v) { o.*m = number<N>(v, lo, hi); };
}

}  // namespace

const std::vector<OptionKey>& option_keys() {
  using O = TranscodeOptions;
  static const std::vector<OptionKey> keys = {
      {"input", nullptr, text(&O::input)},
      {"output", nullptr, text(&O::output)},
      {"filters", "vf", text(&O::filters)},
      {"device", nullptr, named(&O::device)},
      {"decode", nullptr, named(&O::decode)},
      {"host", nullptr, named(&O::host)},
      {"mem", nullptr, text(&O::mem)},
      {"encoder", nullptr, text(&O::encoder)},
      {"crf", nullptr, count(&O::crf, 0, 51)},
      {"preset", nullptr, text(&O::preset)},
      {"qscale", nullptr, count(&O::qscale, 1, 31)},
      {"gop", nullptr, count(&O::gop, 0, 100000)},
      {"encode_threads", nullptr, count(&O::encode_threads, 0, 256)},
      {"encode_segments", nullptr, count(&O::encode_segments, 1, 64)},
      {"graphs", nullptr, [](O& o, const std::string& v) { o.graphs = boolean(v); }},
      {"queue_depth", nullptr, count<std::size_t>(&O::queue_depth, 1, 4096)},
      {"loop", nullptr, count(&O::loop, 1, 1000000)},
      {"decode_sessions", nullptr,
       [](O& o, const std::string& v) {
         o.decode_sessions = v == "auto" ? O::kAutoSessions : number<int>(v, 1, 64);
       }},
      {"realtime", nullptr, [](O& o, const std::string& v) { o.realtime = boolean(v); }},
      {"stall_timeout_s", nullptr,
       [](O& o, const std::string& v) { o.stall_timeout_s = number<double>(v, 0.1, 86400); }},
      {"max_frames", "frames",
       [](O& o, const std::string& v) { o.max_frames = number<std::int64_t>(v, 1, INT64_MAX); }},
      {"budget", "budget_bytes",
       [](O& o, const std::string& v) { o.budget = number<std::size_t>(v, 1, SIZE_MAX); }},
  };
  return keys;
}

namespace {
const OptionKey* find_key(std::string_view key) {
  const auto& keys = option_keys();
  const auto it = std::find_if(keys.begin(), keys.end(), [&](const OptionKey& k) {
    return key == k.name || (k.alias && key == k.alias);
  });
  return it == keys.end() ? nullptr : &*it;
}
}  // namespace

bool is_option_key(std::string_view key) { return find_key(key) != nullptr; }

void set_option(TranscodeOptions& o, std::string_view key, const std::string& value,
                std::string_view where) {
  const OptionKey* k = find_key(key);
  if (!k) {
    std::string known;
    for (const auto& each : option_keys())
      known += (known.empty() ? "" : ", ") + std::string(each.name);
    throw usage_error(fmt::format("{}: unknown option '{}' (known: {})", where, key, known));
  }
  try {
    k->set(o, value);
  } catch (const input_error& e) {
    throw usage_error(
        fmt::format("{}: {}{}", where, key, e.what()));  // "where: crf 99: outside 0..51"
  }
}

}  // namespace vpipe
