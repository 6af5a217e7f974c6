#include "vpipe/pipeline/io/protocols.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>

namespace vpipe {

namespace {

// One row per protocol vpipe opens. A scheme FFmpeg has that is not here is refused by name.
constexpr std::array kProtocols{
    //        scheme   read  write  live  reconnects  muxer  live_options  beneath
    Protocol{"file", true, true, false, false, "", "", ""},
    Protocol{"pipe", true, true, false, false, "mpegts", "", ""},  // "-", pipe:, pipe:1
    Protocol{"fd", true, true, false, false, "mpegts", "", ""},
    Protocol{"udp", true, true, true, false, "mpegts", "overrun_nonfatal=1", ""},
    Protocol{"rtp", true, true, true, false, "rtp_mpegts", "", "udp"},
    Protocol{"srt", true, true, true, true, "mpegts", "", ""},
    Protocol{"tcp", true, true, true, true, "mpegts", "", ""},
    Protocol{"rtsp", true, false, true, true, "", "", "tcp,udp,rtp"},  // FFmpeg's rtsp demuxer
    Protocol{"rtsps", true, false, true, true, "", "", "tcp,tls,udp,rtp"},
    Protocol{"rtmp", true, false, true, true, "", "", "tcp"},
    Protocol{"http", true, false, false, true, "", "", "tcp,httpproxy,crypto"},
    Protocol{"https", true, false, false, true, "", "", "tcp,tls,httpproxy,crypto"},
};

// A protocol FFmpeg itself has (either way), by name.
bool ffmpeg_has_protocol(std::string_view name) {
  for (const int output : {0, 1}) {
    void* it = nullptr;
    while (const char* known = avio_enum_protocols(&it, output))
      if (name == known) return true;
  }
  return false;
}

}  // namespace

std::span<const Protocol> protocols() { return kProtocols; }

std::string scheme_name(std::string_view url) {
  if (url == "-") return "pipe";
  const auto colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0 || url.find('/') < colon) return "file";
  if (url.compare(colon, 3, "://") == 0) return std::string(url.substr(0, colon));
  // "subfile,,start,0,end,0,,:PATH": the name stops at the first ','
  const std::string name(url.substr(0, std::min(colon, url.find(','))));
  return ffmpeg_has_protocol(name) ? name : "file";  // "a:b.mp4": a local file's name
}

const Protocol* protocol_of(std::string_view url) {
  const std::string scheme = scheme_name(url);
  for (const auto& p : kProtocols)
    if (p.scheme == scheme) return &p;
  return nullptr;
}

std::optional<std::string> local_file(const std::string& url) {
  if (url.empty() || url == "-" || scheme_name(url) != "file") return std::nullopt;
  return url.rfind("file:", 0) == 0 ? url.substr(5) : url;
}

void check_protocol(std::string_view url, Direction way, std::string_view what) {
  const Protocol* p = protocol_of(url);
  const bool reading = way == Direction::kRead;
  if (p && (reading ? p->read : p->write)) return;
  std::string allowed;
  for (const auto& row : kProtocols)
    if (reading ? row.read : row.write)
      allowed += (allowed.empty() ? "" : ", ") + std::string(row.scheme);
  const std::string scheme = scheme_name(url);
  const bool local_spelling = url.find("://") == std::string_view::npos;
  throw usage_error(fmt::format(
      "{} '{}': vpipe does not {} through {}'{}' (it {} {}){}", what, url,
      reading ? "read" : "write", p ? "" : "FFmpeg's protocol ", scheme,
      reading ? "reads" : "writes", allowed,
      local_spelling ? fmt::format("; a file of that name: ./{}", url) : std::string()));
}

const std::string& protocol_whitelist() {
  static const std::string list = [] {
    std::vector<std::string> names;
    auto add = [&](std::string_view csv) {
      for (std::size_t at = 0; at <= csv.size();) {
        const auto comma = std::min(csv.find(',', at), csv.size());
        const std::string name(csv.substr(at, comma - at));
        if (!name.empty() && ffmpeg_has_protocol(name) &&
            std::find(names.begin(), names.end(), name) == names.end())
          names.push_back(name);
        at = comma + 1;
      }
    };
    for (const auto& p : kProtocols) {
      add(p.scheme);
      add(p.beneath);
    }
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
    return out;
  }();
  return list;
}

bool is_live_input(std::string_view url) {
  const Protocol* p = protocol_of(url);
  return p && p->live;
}

bool can_reconnect(std::string_view url) {
  const Protocol* p = protocol_of(url);
  return p && p->reconnects;
}

bool is_pipe(std::string_view url) {
  const std::string scheme = scheme_name(url);
  return scheme == "pipe" || scheme == "fd";
}

bool can_read_again(const std::string& url) {
  if (is_pipe(url) || is_live_input(url)) return false;
  const auto local = local_file(url);
  if (!local) return true;
  std::error_code ec;
  const auto st = std::filesystem::status(*local, ec);
  return !(std::filesystem::is_fifo(st) || std::filesystem::is_character_file(st) ||
           std::filesystem::is_socket(st));
}

bool is_stdout(std::string_view url) {
  return url == "-" || url == "pipe:" || url == "pipe:1" || url == "fd:1";
}

std::string network_output_format(std::string_view url) {
  const Protocol* p = protocol_of(url);
  return p ? std::string(p->muxer) : std::string();
}

std::string ffmpeg_url(const std::string& name) {
  if (name == "-") return "pipe:";  // as the ffmpeg tool: stdin read, stdout written
  const auto colon = name.find(':');
  if (colon == std::string::npos || colon == 0 || name.find('/') < colon ||
      name.rfind("file:", 0) == 0 || scheme_name(name) != "file")
    return name;
  return "file:" + name;  // "a:b.mp4": a colon FFmpeg would read as a protocol it does not have
}

void set_open_options(AVDictionary** options, std::string_view url, bool live) {
  av_dict_set(options, "protocol_whitelist", protocol_whitelist().c_str(), 0);
  const Protocol* p = protocol_of(url);
  if (live && p && !p->live_options.empty())
    av_dict_parse_string(options, std::string(p->live_options).c_str(), "=", ",", 0);
}

namespace {

// Why a local ISO-BMFF file (MP4, MOV, M4V, 3GP) FFmpeg found invalid cannot be read, where
// its top-level boxes tell: media data (mdat) but no index (moov), which a recorder writes
// last; empty when they do not.
std::string cut_recording_note(const std::string& name) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(name, ec);
  std::ifstream f(name, std::ios::binary);
  if (ec || !f) return "";
  bool moov = false, mdat = false;
  std::uint64_t at = 0;
  for (int n = 0; n < 4096 && at + 8 <= size; ++n) {
    unsigned char h[16];
    if (!f.seekg(static_cast<std::streamoff>(at)) || !f.read(reinterpret_cast<char*>(h), 8)) break;
    std::uint64_t box = 0;
    for (int i = 0; i < 4; ++i) box = box << 8 | h[i];
    const std::string type(reinterpret_cast<const char*>(h) + 4, 4);
    if (!std::all_of(type.begin(), type.end(),
                     [](unsigned char c) { return std::isprint(c) != 0; }))
      return "";     // not boxes: some other damage
    if (box == 1) {  // a 64-bit size follows
      if (!f.read(reinterpret_cast<char*>(h) + 8, 8)) break;
      box = 0;
      for (int i = 8; i < 16; ++i) box = box << 8 | h[i];
    } else if (box == 0) {
      box = size - at;  // to the end of the file
    }
    if (box < 8) return "";
    moov |= type == "moov";
    mdat |= type == "mdat";
    at += box;
  }
  if (moov || !mdat) return "";
  return " (the file has media data but no index, the moov box a recorder writes last: the "
         "recording was cut off before it finished. FFmpeg cannot read it either; a tool such "
         "as untrunc can rebuild the index from a whole file of the same camera)";
}

}  // namespace

UniqueDemuxContext open_input(const std::string& name, const InputOpenOptions& options) {
  check_protocol(name, Direction::kRead, "input");
  for (const auto& [k, v] : options.extra)
    if (k == "protocol_whitelist" || k == "protocol_blacklist")
      throw usage_error(
          fmt::format("input option {}: vpipe sets the protocols itself (the "
                      "allowed ones: {})",
                      k, protocol_whitelist()));
  const std::string path = ffmpeg_url(name);
  AVFormatContext* raw = avformat_alloc_context();
  if (!raw) throw ffmpeg_error(AVERROR(ENOMEM), "avformat_alloc_context: out of memory");
  if (options.watch) raw->interrupt_callback = options.watch->callback();
  AVDictionary* opts = nullptr;
  if (options.low_latency) {  // (not fflags=nobuffer: it loses the packets read while probing)
    av_dict_set(&opts, "probesize", "500000", 0);        // bytes: a few frames of a live feed
    av_dict_set(&opts, "analyzeduration", "500000", 0);  // µs
  }
  set_open_options(&opts, path,
                   options.low_latency);  // the allowed protocols, a live row's options
  for (const auto& [k, v] : options.extra) av_dict_set(&opts, k.c_str(), v.c_str(), 0);
  if (options.watch) {
    options.watch->reset();
    options.watch->arm();
    // A Ctrl-C already here would not break the open (a FIFO with no writer waits on).
    if (const AVIOInterruptCB cb = options.watch->callback(); cb.callback(cb.opaque) != 0) {
      av_dict_free(&opts);
      avformat_free_context(raw);
      throw ffmpeg_error(AVERROR_EXIT,
                         fmt::format("cannot open input '{}': interrupted before it opened", name));
    }
  }
  const int ret = avformat_open_input(&raw, path.c_str(), nullptr, &opts);  // frees raw on failure
  // What FFmpeg took out of the dictionary it knew: a key of the user's left in it is a
  // misspelling or an option of another demuxer, refused rather than ignored.
  std::string unknown;
  for (const auto& [k, v] : options.extra)
    if (ret >= 0 && av_dict_get(opts, k.c_str(), nullptr, 0))
      unknown += (unknown.empty() ? "" : ", ") + k;
  av_dict_free(&opts);
  if (!unknown.empty()) {
    avformat_close_input(&raw);
    throw usage_error(fmt::format(
        "input option(s) {} for '{}': not an option of its demuxer or protocol (see `ffmpeg -h "
        "demuxer=NAME` or `ffmpeg -h protocol=NAME`)",
        unknown, name));
  }
  if (ret < 0 && options.watch && (options.watch->interrupted() || ret == AVERROR(EINTR)))
    throw ffmpeg_error(
        ret, fmt::format("cannot open input '{}': interrupted while waiting for it", name));
  const bool stalled = options.watch && options.watch->stalled();
  if (ret < 0 && stalled)
    throw ffmpeg_error(ret, fmt::format("cannot open input '{}': no data for {} s", name,
                                        options.watch->timeout_s()));
  if (ret == AVERROR_INVALIDDATA)
    throw ffmpeg_error(ret, fmt::format("cannot open input '{}': {}{}", name, av_error_text(ret),
                                        cut_recording_note(name)));
  av_check(ret, fmt::format("cannot open input '{}'", name));
  UniqueDemuxContext ctx(raw);
  if (options.watch) options.watch->arm();
  const int info = avformat_find_stream_info(ctx.get(), nullptr);
  if (options.watch) {
    options.watch->disarm();
    // Ctrl-C while probing cuts the probe short: say so, not that the stream is unreadable.
    if (options.watch->interrupted())
      throw ffmpeg_error(AVERROR_EXIT,
                         fmt::format("cannot open input '{}': interrupted while reading its stream "
                                     "info",
                                     name));
    if (info < 0 && options.watch->stalled())
      throw ffmpeg_error(info, fmt::format("cannot read stream info of '{}': no data for {} s",
                                           name, options.watch->timeout_s()));
  }
  av_check(info, fmt::format("cannot read stream info of '{}'", name));
  return ctx;
}

}  // namespace vpipe
