// The protocols vpipe reads and writes through, as one table (FFmpeg's
// protocol_whitelist is built from it), and the one way an input is opened.
//
// A name is a local file (a plain path, file:, or a colon name FFmpeg has no
// protocol for), a pipe ("-", pipe:, fd:), or a URL whose scheme has a row
// here. Every other protocol FFmpeg has is refused by name: the meta-protocols
// (tee, md5, concat, concatf, subfile, cache, async, crypto, data, …) write or
// read files no check of vpipe's would see (`tee:in.ts` emptied the input,
// `md5:in.ts` replaced it with a hash).
//
// Adding a protocol is one row of kProtocols (protocols.cpp): its scheme, which
// ways it is allowed, whether it is live and reconnects, the container an
// output carries, the options a live input opens with, and the protocols
// FFmpeg opens beneath it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

enum class Direction { kRead, kWrite };

struct Protocol {
  std::string_view scheme;           // "udp" in udp://…, "pipe" in pipe:1; "file" for local names
  bool read = false, write = false;  // allowed as an input, as an output
  bool live = false;                 // read as the data arrives, at the sender's pace
  bool reconnects = false;           // a dropped connection can be opened again
  std::string_view muxer;            // what an output carries ("mpegts"); empty: the name decides
  std::string_view live_options;     // "k=v,…" a live input opens with
  std::string_view beneath;          // protocols FFmpeg opens under it ("tcp,tls")
};

// Every row, in the order `vpipe --help` lists them.
[[nodiscard]] std::span<const Protocol> protocols();

// The row of `url` (a local name is "file"; "-" is "pipe"), or null when its scheme
// is one vpipe does not allow (a meta-protocol, or one it does not know).
[[nodiscard]] const Protocol* protocol_of(std::string_view url);

// The scheme FFmpeg would open `url` with: "file" for local names, else the
// letters before ':' ("tee" in "tee:a.ts|b.ts", "udp" in udp://…).
[[nodiscard]] std::string scheme_name(std::string_view url);

// The local file `url` names ("a.mp4", "file:a.mp4", "a:b.mp4"), or nullopt for pipes
// and URLs: the one place that strips "file:".
[[nodiscard]] std::optional<std::string> local_file(const std::string& url);

// Throws usage_error when `url` may not be opened that way, naming `what`
// ("output", "--report") and the protocol: "output 'tee:in.ts': vpipe does not
// open FFmpeg's tee: protocol …".
void check_protocol(std::string_view url, Direction way, std::string_view what);

// FFmpeg's protocol_whitelist for every open: each allowed row and what it opens beneath.
[[nodiscard]] const std::string& protocol_whitelist();

// A live input: a network URL read as the data arrives (udp, rtp, srt, rtsp,
// rtmp, tcp), as opposed to a file that can be read at any speed.
[[nodiscard]] bool is_live_input(std::string_view url);
// Whether `url` is the standard input or output, or another pipe: "-", pipe:, fd:.
[[nodiscard]] bool is_pipe(std::string_view url);
// Whether reading `url` again from its start gives the same input: not a pipe (pipe:,
// fd:, "-"), a live feed, or a local FIFO, character device or socket. Files, file:///
// and seekable network files (http) can.
[[nodiscard]] bool can_read_again(const std::string& url);
// Whether `url`, as an output, writes to the standard output: "-", "pipe:",
// "pipe:1", "fd:1".
[[nodiscard]] bool is_stdout(std::string_view url);
// Whether a dropped connection can be opened again (rtsp, srt, rtmp, tcp, http):
// udp and rtp have no connection; they just wait for data.
[[nodiscard]] bool can_reconnect(std::string_view url);
// The container a network output URL or a pipe carries: "mpegts" for udp, srt
// and tcp, and for "-", pipe: and fd:; "rtp_mpegts" for rtp; empty for
// anything else (the name decides).
[[nodiscard]] std::string network_output_format(std::string_view url);

// The name to hand FFmpeg for `name`: "-" is the standard input or output
// ("pipe:", as for the ffmpeg tool); a name FFmpeg would read as a protocol it
// does not have ("a:b.mp4", "clip:1.ts") is a local file, so "file:" goes
// before it; anything else, and any scheme:// URL, is unchanged.
[[nodiscard]] std::string ffmpeg_url(const std::string& name);

// The protocol_whitelist (and, for a live input, its row's live_options) set
// on `options`, for avformat_open_input, avio_open2 or a muxer's header.
void set_open_options(AVDictionary** options, std::string_view url, bool live);

struct InputOpenOptions {
  InputWatch* watch = nullptr;                             // must outlive the context
  bool low_latency = false;                                // live: a small probe (0.5 s / 500 kB)
  std::vector<std::pair<std::string, std::string>> extra;  // --input-option k=v, passed to FFmpeg
};

// Opens `path` for reading (only through the allowed protocols) and finds its
// stream info. Errors name the file.
[[nodiscard]] UniqueDemuxContext open_input(const std::string& path,
                                            const InputOpenOptions& options = {});

}  // namespace vpipe
