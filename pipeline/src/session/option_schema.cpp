#include "vpipe/pipeline/session/option_schema.hpp"

#include "vpipe/pipeline/session/encoder_controls.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <cuda_runtime_api.h>

extern "C" {
#include <libavutil/parseutils.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/pipeline/io/track_map.hpp"
#include "vpipe/pipeline/parallel/gpu_placement.hpp"

namespace vpipe {

std::size_t parse_bytes(const std::string& s, std::string_view what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit.empty()  ? 1
                      : unit == "K" ? 1024.0
                      : unit == "M" ? 1024.0 * 1024
                      : unit == "G" ? 1024.0 * 1024 * 1024
                                    : -1;
  if (end == s.c_str() || mult < 0 || !(v > 0) || !(v * mult < 1e15))
    throw usage_error(fmt::format("{} {}: expected bytes or 800M, 1.5G", what, s));
  return static_cast<std::size_t>(v * mult);
}

std::int64_t parse_bitrate(const std::string& s, std::string_view what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit.empty()                 ? 1
                      : unit == "k" || unit == "K" ? 1e3
                      : unit == "M"                ? 1e6
                      : unit == "G"                ? 1e9
                                                   : -1;
  if (end == s.c_str() || mult < 0 || !(v > 0) || !(v * mult < 1e12))
    throw usage_error(fmt::format("{} {}: expected bits per second or 800k, 5M", what, s));
  if (v * mult < 1000)  // encoders count kbit/s: below 1k is 0 to them (x264: "not specified")
    throw usage_error(fmt::format("{} {}: expected 1k or more (bits per second)", what, s));
  return static_cast<std::int64_t>(v * mult);
}

double parse_duration(const std::string& s, std::string_view what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (end == s.c_str() || mult < 0 || !(v > 0) || !(v * mult < 1e9))
    throw usage_error(fmt::format("{} {}: expected seconds or 90s, 20m, 2h", what, s));
  return v * mult;
}

namespace {

using O = TranscodeOptions;
using Setter = std::function<void(O&, const std::string&)>;
using Getter = std::function<std::string(const O&)>;

// Every setter's error reads " VALUE: why"; set_option puts the key (or the flag) before it.
template <class T>
T number(const std::string& text, T lo, T hi) {
  T v{};
  const auto* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end)
    throw usage_error(fmt::format(" {}: not a number", text));
  if (!(v >= lo && v <= hi))  // (NaN, which from_chars reads, is in no range)
    throw usage_error(fmt::format(" {}: outside {}..{}", text, lo, hi));
  return v;
}

bool boolean(const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw usage_error(fmt::format(" {}: expected true or false", text));
}

std::string dashed(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return "--" + key;
}

OptionSpec row(std::string key, std::string value, std::string help, Setter set, Getter get) {
  OptionSpec s;
  s.flag = dashed(key);
  s.key = std::move(key);
  s.value = std::move(value);
  s.help = std::move(help);
  s.set = std::move(set);
  s.get = std::move(get);
  return s;
}

OptionSpec text(std::string key, std::string O::*m, std::string value, std::string help) {
  return row(
      std::move(key), std::move(value), std::move(help),
      [m](O& o, const std::string& v) { o.*m = v; }, [m](const O& o) { return o.*m; });
}

template <class N>
OptionSpec count(std::string key, N O::*m, N lo, N hi, std::string help) {
  return row(
      std::move(key), fmt::format("{}..{}", lo, hi), std::move(help),
      [m, lo, hi](O& o, const std::string& v) { o.*m = number<N>(v, lo, hi); },
      [m](const O& o) { return fmt::format("{}", o.*m); });
}

// A number that may be left unset (the default then depends on something else).
template <class N>
OptionSpec maybe_count(std::string key, std::optional<N> O::*m, N lo, N hi, std::string help,
                       std::string value = "") {
  return row(
      std::move(key), value.empty() ? fmt::format("{}..{}", lo, hi) : std::move(value),
      std::move(help), [m, lo, hi](O& o, const std::string& v) { o.*m = number<N>(v, lo, hi); },
      [m](const O& o) { return o.*m ? fmt::format("{}", *(o.*m)) : ""; });
}

OptionSpec real(std::string key, double O::*m, double lo, double hi, std::string help) {
  return row(
      std::move(key), fmt::format("seconds, {}..{}", lo, hi), std::move(help),
      [m, lo, hi](O& o, const std::string& v) {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != 0) throw usage_error(fmt::format(" {}: not a number", v));
        if (!(x >= lo && x <= hi)) throw usage_error(fmt::format(" {}: outside {}..{}", v, lo, hi));
        o.*m = x;
      },
      [m](const O& o) { return fmt::format("{}", o.*m); });
}

template <class E>
OptionSpec choice(std::string key, E O::*m, std::string help) {
  std::vector<std::string_view> names;
  for (const auto& [name, v] : EnumNames<E>::table) names.push_back(name);
  return row(
      std::move(key), fmt::format("{{{}}}", fmt::join(names, "|")), std::move(help),
      [m](O& o, const std::string& v) {
        try {
          o.*m = from_name<E>(v, "");
        } catch (const input_error& e) {
          throw usage_error(e.what());  // " VALUE: expected one of …"
        }
      },
      [m](const O& o) { return std::string(name_of(o.*m)); });
}

// A yes/no option: on the command line a switch (--realtime), or a value (--graphs on).
OptionSpec yes_no(std::string key, bool O::*m, Form form, std::string help) {
  auto s = row(
      std::move(key), form == Form::kSwitch ? "" : "{on|off}", std::move(help),
      [m](O& o, const std::string& v) { o.*m = boolean(v); },
      [m, form](const O& o) {
        return std::string(o.*m ? (form == Form::kSwitch ? "true" : "on")
                                : (form == Form::kSwitch ? "false" : "off"));
      });
  s.form = form;
  return s;
}

OptionSpec with(OptionSpec s, std::string flag, std::string alias = "", std::string applies = "") {
  if (!flag.empty()) s.flag = std::move(flag);
  s.alias = std::move(alias);
  s.applies = std::move(applies);
  return s;
}

OptionSpec applies_to(OptionSpec s, std::string applies) {
  s.applies = std::move(applies);
  return s;
}

OptionSpec only(OptionSpec s, unsigned front_ends) {
  s.front_ends = front_ends;
  return s;
}

OptionSpec positional(OptionSpec s) {
  s.form = Form::kPositional;
  s.flag = s.key;
  return s;
}

// A rate in bits per second, with k/M/G (decimal, as FFmpeg's -b:v).
OptionSpec rate(std::string key, std::optional<std::int64_t> O::*m, std::string help) {
  return row(
      std::move(key), "BITS (800k, 5M)", std::move(help),
      [m](O& o, const std::string& v) {
        try {
          o.*m = parse_bitrate(v, "");
        } catch (const usage_error& e) {
          throw usage_error(e.what());  // " VALUE: expected …"
        }
      },
      [m](const O& o) { return o.*m ? fmt::format("{}", *(o.*m)) : ""; });
}

// The devices visible now, for gpus (all, a count, or a list).
std::vector<int> visible_gpus(const std::string& text) {
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  try {
    return parse_gpus(text, visible);
  } catch (const usage_error& e) {
    throw usage_error(std::string(" ") + e.what());
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

namespace {

// A time: seconds (90, 90.5, 1500ms) or [hh:]mm:ss[.ms], as FFmpeg's -ss reads it.
OptionSpec time_of(std::string key, std::optional<double> O::*m, std::string help) {
  return row(
      std::move(key), "TIME", std::move(help),
      [m](O& o, const std::string& v) {
        std::int64_t us = 0;
        if (av_parse_time(&us, v.c_str(), 1) < 0 || us < 0)
          throw usage_error(fmt::format(" {}: expected seconds (90.5) or [hh:]mm:ss[.ms]", v));
        o.*m = static_cast<double>(us) / 1e6;
      },
      [m](const O& o) { return o.*m ? fmt::format("{}", *(o.*m)) : ""; });
}

OptionSpec frame_number(std::string key, std::optional<std::int64_t> O::*m, std::string help) {
  return maybe_count<std::int64_t>(std::move(key), m, 0, INT64_MAX, std::move(help), "N>=0");
}

std::vector<OptionSpec> cut_rows() {
  return {
      time_of("ss", &O::start_s,
              "start here, exactly: the first frame out is the one shown at this time after the "
              "input's start (seconds or [hh:]mm:ss[.ms]), e.g. --ss 90.5 or --ss 1:30.5; the "
              "input is read from the keyframe before it"),
      time_of("to", &O::end_s,
              "stop before this time (the same clock as --ss), e.g. --ss 10 --to 20 keeps 10 s"),
      time_of("duration", &O::duration_s,
              "keep this long from the start, or from --ss / --ss-frame, e.g. --duration 30; "
              "the one cut a live input takes"),
      frame_number("ss_frame", &O::start_frame,
                   "start at this frame, counted in display order from 0, e.g. --ss-frame 300"),
      frame_number("to_frame", &O::end_frame,
                   "stop before this frame, e.g. --ss-frame 300 --to-frame 600 keeps 300 frames"),
      time_of(
          "thumbnail", &O::thumbnail_s,
          "one picture, the first frame shown at or after this time (as --ss T --frames 1, "
          "and FFmpeg's -ss T -frames:v 1), as a picture into a .png or .jpg output, e.g. vpipe "
          "transcode in.mp4 thumb.jpg --thumbnail 1:30"),
      yes_no("copyts", &O::copyts, Form::kSwitch,
             "keep the input's timestamps in the output (by default it starts at zero, as "
             "FFmpeg's does: a cut's start, or the input's own)"),
      yes_no("smart_cut", &O::smart_cut, Form::kSwitch,
             "with --encoder copy and a cut: copy the GOPs that lie wholly inside the cut "
             "untouched and re-encode only the frames at its two edges (libx264 in the "
             "source's profile; --crf and --preset apply to them), so the cut is exact to the "
             "frame at a fraction of a re-encode's time; H.264 in MP4, MOV or Matroska, e.g. "
             "vpipe transcode in.mp4 out.mp4 --encoder copy --ss 60 --to 360 --smart-cut"),
  };
}

std::vector<OptionSpec> io_rows() {
  return {
      positional(text("input", &O::input, "FILE|URL|-",
                      "input file or URL (anything FFmpeg reads; udp://, rtp://, srt://, rtsp://, "
                      "rtmp://, tcp:// are live: low-latency open, stall timeout, frames dropped "
                      "when behind), or - for the standard input (MPEG-TS, Matroska, or an MP4 "
                      "with its index first: -movflags +faststart)")),
      positional(text(
          "output", &O::output, "FILE|URL|-|null",
          "output file (the extension picks the container; .png or .jpg: one picture, the first "
          "frame, img-%04d.png: a picture per frame), udp://HOST:PORT, srt://… "
          "or rtp://… (MPEG-TS), - for the standard output (MPEG-TS), or null: write "
          "nothing (no encoder; measures decode and filters)")),
      with(text("filters", &O::filters, "CHAIN",
                "filter chain, e.g. \"resize=1280x720,blur=sigma=1.5\" (see 'vpipe filters'); "
                "with several outputs it runs once, before the fork, and each output's own "
                "(OUT:vf=CHAIN) after it"),
           "--vf", "vf"),
      [] {
        auto s = row(
            "outputs", "PATH[:key=value…]",
            "another output from the same decode (repeatable): one decode feeds every output, "
            "each with its own filters, encoder and options, e.g. --output "
            "720.mp4:vf=resize=1280x720:encoder=mpeg4; OUT takes keys the same way. Keys: "
            "vf and the options marked 'per output' in 'vpipe options'; the rest are the "
            "run's. Audio goes to every output; one that fails is reported and the others "
            "finish",
            [](O& o, const std::string& v) { o.outputs.push_back(v); },
            [](const O& o) { return joined(o.outputs); });
        s.form = Form::kRepeatable;
        s.flag = "--output";
        s.alias = "output_list";
        return s;
      }(),
      choice("device", &O::device,
             "cpu, cuda or auto (auto: the CUDA path where a CUDA device is usable)"),
      choice("decode", &O::decode,
             "cpu (libavcodec threads), nvdec (FFmpeg's cuda hwaccel; frames stay on the device) "
             "or auto (nvdec when the chain starts with a CUDA filter)"),
      choice("nvdec_api", &O::nvdec_api,
             "how FFmpeg drives NVDEC: hwaccel (FFmpeg's own parser on the CPU, as ffmpeg "
             "-hwaccel cuda), cuvid (NVIDIA's parser in the driver, FFmpeg's h264_cuvid, "
             "hevc_cuvid… decoders, as ffmpeg -c:v hevc_cuvid; no decoder threads) or auto "
             "(cuvid with --streams > 1 and one decode session where FFmpeg has a cuvid "
             "decoder for the codec, faster there in RESULTS; else hwaccel)"),
      with(row(
               "max_frames", "N>=1", "stop after N video frames",
               [](O& o, const std::string& v) {
                 o.max_frames = number<std::int64_t>(v, 1, INT64_MAX);
               },
               [](const O& o) { return o.max_frames ? fmt::format("{}", *o.max_frames) : ""; }),
           "--frames", "frames"),
      choice("fit", &O::fit,
             "a picture size the encoder cannot take (odd, for 4:2:0): pad (repeat the last "
             "column/row), crop (drop it) or error"),
      choice("drop", &O::drop,
             "when a stage falls behind: block (wait; nothing lost), drop-oldest or drop-newest "
             "(lose a frame, counted per queue; latency stays bounded); auto: block for files, "
             "drop-newest for live inputs"),
      count<std::size_t>("max_in_flight", &O::max_in_flight, 0, 100000,
                         "at most N frames between the decoder and the output (0: only the "
                         "queues bound them); at the limit the decoder waits (drop block) or "
                         "drops the new frame, counted"),
      yes_no("keep_partial", &O::keep_partial, Form::kSwitch,
             "keep the output file (a ladder: its renditions) if the run fails"),
      yes_no("realtime", &O::realtime, Form::kSwitch,
             "read the input no faster than its timestamps (rehearse a live feed with a file)"),
  };
}

// --hls / --dash: a ladder of the outputs, and its segments' length.
std::vector<OptionSpec> ladder_rows() {
  return {
      text("hls", &O::hls, "DIR",
           "write an HLS ladder into DIR: each output's PATH names a rendition "
           "(DIR/NAME/index.m3u8, MPEG-TS segments), keyframes forced at the same times in "
           "every rendition so segments start on them and line up, and DIR/master.m3u8 "
           "lists the renditions with their measured bandwidth, e.g. vpipe transcode IN "
           "720p:vf=resize=1280x720 --output 480p:vf=resize=854x480 --hls out/"),
      text("dash", &O::dash, "DIR",
           "write a DASH ladder into DIR, as --hls does: DIR/NAME/manifest.mpd per "
           "rendition (fragmented MP4 segments), keyframes forced at the same times, and "
           "DIR/manifest.mpd with every rendition in one adaptation set"),
      with(row(
               "segment_s", "SECONDS (4, 4s, 2.5)",
               "--hls, --dash: the segments' length; a keyframe is forced on the first frame at or "
               "after "
               "each multiple of it",
               [](O& o, const std::string& v) {
                 const double s = parse_duration(v, "");
                 if (!(s >= 0.1 && s <= 3600))
                   throw usage_error(fmt::format(" {}: outside 0.1..3600 s", v));
                 o.segment_s = s;
               },
               [](const O& o) { return fmt::format("{}", o.segment_s); }),
           "--segment"),
  };
}

std::vector<OptionSpec> cuda_rows() {
  return {
      applies_to(choice("mem", &O::mem,
                        "device memory per frame: naive (cudaMalloc/cudaFree), pool "
                        "(cudaMallocAsync pool), pool-release0, vmm (virtual memory arena), slab "
                        "(recycled fixed blocks), graph (a CUDA Graph memory node per buffer); "
                        "docs/MEMORY.md says which when"),
                 "CUDA path"),
      applies_to(choice("host", &O::host, "host staging: pinned (cudaHostAlloc ring) or pageable"),
                 "CUDA path"),
      applies_to(yes_no("graphs", &O::graphs, Form::kValue,
                        "each run of CUDA filters is one stage; on: it launches one CUDA Graph "
                        "per frame (captured once per frame size; intermediate buffers are graph "
                        "memory nodes); off: each filter's kernels are launched in turn"),
                 "CUDA path"),
      with(row(
               "budget", "SIZE (512M, 2G)",
               "cap the strategy's device memory, e.g. 512M, 2G (a shared GPU); out of memory "
               "trims and retries twice, then fails with a report",
               [](O& o, const std::string& v) {
                 try {
                   o.budget = parse_bytes(v, "");
                 } catch (const usage_error& e) {
                   throw usage_error(e.what());  // " VALUE: expected …"
                 }
               },
               [](const O& o) { return o.budget ? fmt::format("{}", *o.budget) : ""; }),
           "", "budget_bytes", "CUDA path"),
      applies_to(yes_no("download_copy", &O::download_copy, Form::kSwitch,
                        "copy each download out of its staging slot before the encoder (the "
                        "older way, for A/B against the slot itself)"),
                 "CUDA path"),
  };
}

std::vector<OptionSpec> encoder_rows() {
  return {
      text("encoder", &O::encoder, "NAME",
           "auto (h264_nvenc where the GPU has NVENC, else libx264; the report says which and "
           "why), libx264, mpeg4, ffv1 (.mkv) or another FFmpeg encoder; or copy: the video "
           "remuxed without decoding (no filter or coding option applies; a cut only with "
           "--smart-cut), e.g. vpipe "
           "transcode in.mp4 out.mkv --encoder copy"),
      applies_to(maybe_count("crf", &O::crf, 0.0, 63.0,
                             "constant quality: 0 lossless … 51 worst (63 for VP9 and AV1), e.g. "
                             "--crf 18 (default: 23 for libx264 and NVENC, else the encoder's "
                             "own); refused with bitrate, and by an encoder that has none"),
                 encoders_taking("crf")),
      applies_to(text("preset", &O::preset, "NAME",
                      "speed: ultrafast … veryslow for libx264/libx265, p1 … p7 for NVENC, 0 … "
                      "13 for SVT-AV1, e.g. --preset slow (default: veryfast for libx264, p4 for "
                      "NVENC, else the encoder's own)"),
                 encoders_taking("preset")),
      applies_to(maybe_count("qscale", &O::qscale, 2, 31,
                             "fixed quantizer: 2 best … 31, e.g. --qscale 5 (default: 3 when no "
                             "bitrate is given)"),
                 encoders_taking("qscale")),
      choice("audio", &O::audio,
             "the input's audio tracks: auto (copied where the container holds the codec, else "
             "re-encoded to its usual one: AAC, or Opus for WebM; the report says which), copy "
             "(a codec the container refuses fails), encode, or none, e.g. --audio encode "
             "--audio-codec libopus"),
      text("audio_codec", &O::audio_codec, "NAME",
           "the encoder for re-encoded audio, e.g. --audio-codec aac (default: the container's "
           "usual); implies --audio encode where --audio is auto"),
      rate("audio_bitrate", &O::audio_bitrate,
           "re-encoded audio's bit rate, e.g. --audio-bitrate 128k (default: the encoder's)"),
      maybe_count("audio_channels", &O::audio_channels, 1, 8,
                  "re-encoded audio mixed to this many channels (their usual layout), e.g. "
                  "--audio-channels 2 (default: the input's); refused where the encoder cannot "
                  "code that many; implies --audio encode where --audio is auto"),
      maybe_count("audio_rate", &O::audio_rate, 8000, 192000,
                  "re-encoded audio resampled to this rate in Hz, e.g. --audio-rate 48000 "
                  "(default: the input's); refused where the encoder or container cannot take "
                  "it; implies --audio encode where --audio is auto"),
  };
}

// Rate control, profile and level, the pixel format and the encoder's own options and threads.
std::vector<OptionSpec> rate_rows() {
  return {
      rate("bitrate", &O::bitrate,
           "target video bit rate, e.g. --bitrate 5M (the encoder then rate-controls to it; "
           "refused with crf or qscale, and by a lossless encoder)"),
      rate("maxrate", &O::maxrate,
           "most bit rate over the buffer (VBV), with bufsize, e.g. --maxrate 6M --bufsize 12M"),
      rate("bufsize", &O::bufsize, "the rate control buffer (VBV) in bits, e.g. --bufsize 12M"),
      text("profile", &O::profile, "NAME",
           "the encoder's profile, e.g. --profile high (libx264), main10 (libx265); the "
           "encoder's default when unset"),
      applies_to(text("level", &O::level, "LEVEL",
                      "the encoder's level, e.g. --level 4.1 (MPEG-2/4: the header's number)"),
                 encoders_taking("level")),
      row(
          "pix_fmt", "NAME",
          "the pixel format the encoder takes, e.g. --pix-fmt yuv420p10le for 10 bits, or "
          "yuv444p; the chain converts to it (default: the chain's own, or the encoder's "
          "nearest, a 10-bit input kept 10-bit). --pix-fmt yuv420p narrows a 10-bit input to 8 "
          "bits, as FFmpeg does: needed with --vf, whose filters take 8 bits",
          [](O& o, const std::string& v) {
            if (av_get_pix_fmt(v.c_str()) == AV_PIX_FMT_NONE)
              throw usage_error(fmt::format(" {}: not a pixel format FFmpeg knows", v));
            o.pix_fmt = v;
          },
          [](const O& o) { return o.pix_fmt; }),
      [] {
        auto s = row(
            "encoder_option", "KEY=VALUE",
            "any option of the encoder, its private ones included (repeatable; a config or "
            "Python takes a list), e.g. --encoder-option x265-params=aq-mode=3, "
            "--encoder-option preset=p6 (NVENC), --encoder-option cpu-used=4 (libvpx-vp9); one the "
            "encoder does not know fails before the first frame",
            [](O& o, const std::string& kv) {
              if (const auto eq = kv.find('='); eq == std::string::npos || eq == 0)
                throw usage_error(fmt::format(" {}: expected key=value", kv));
              o.encoder_options.push_back(kv);
            },
            [](const O& o) { return joined(o.encoder_options); });
        s.form = Form::kRepeatable;
        s.alias = "encoder_options";
        return s;
      }(),
      count("gop", &O::gop, 0, 100000,
            "at most N frames from one keyframe to the next (0: the encoder's default; short GOPs "
            "seek faster and let decode_sessions split the file finer)"),
      count("encode_threads", &O::encode_threads, 0, 256,
            "video encoder threads (0: the encoder chooses)"),
      count("encode_segments", &O::encode_segments, 1, 64,
            "encode the output with K encoders at once, each on a segment of gop frames (default "
            "60) with its share of the cores, joined in order into one stream: for a CPU encoder "
            "that does not use every core (libx264 at 720p); holds K + 1 segments of frames in "
            "memory; files only"),
  };
}

std::vector<OptionSpec> reading_rows() {
  return {
      count("loop", &O::loop, 1, 1000000, "read the input N times over, timestamps continuing"),
      count<std::size_t>("queue_depth", &O::queue_depth, 1, 256,
                         "frames in flight between two stages"),
      count("decode_threads", &O::decode_threads, 0, 64,
            "decoder threads (0: automatic: FFmpeg's choice; with NVDEC 2 frame threads on a "
            "file, each parsing a frame ahead of the engine, and 1 on a live input)"),
      row(
          "decode_sessions", "auto|1..64",
          "decode one input with N decoder sessions at once, each a segment (GOP) between "
          "keyframes, frames put back in order (NVDEC: one session per engine, up to 7 on an "
          "H200); an open GOP is decoded with the one before it; keyframes further apart than a "
          "segment's limit fall back to one session. auto: one session measures the first "
          "frames, then more (up to 4 with NVDEC) only where decode bounds the run and the "
          "segments' hold keeps p50 latency within twice one session's; the report says why",
          [](O& o, const std::string& v) {
            o.decode_sessions = v == "auto" ? O::kAutoSessions : number<int>(v, 1, 64);
          },
          [](const O& o) {
            return o.decode_sessions == O::kAutoSessions ? std::string("auto")
                                                         : fmt::format("{}", o.decode_sessions);
          }),
      count<std::size_t>("segment_packets", &O::segment_packets, 0, 1000000,
                         "with decode_sessions: a segment's most packets before one session "
                         "takes over (0: 120 with NVDEC, 600 on the CPU)"),
  };
}

std::vector<OptionSpec> live_rows() {
  const std::string live = "live input";
  return {
      with(real("stall_timeout_s", &O::stall_timeout_s, 0.05, 3600.0,
                "seconds without data before the input counts as stalled: the output is "
                "finalized, or the input reopened (see reconnect)"),
           "--stall-timeout", "", live),
      applies_to(count("reconnect", &O::reconnect, 0, 1000,
                       "times to reopen an input with a connection (rtsp, srt, rtmp, tcp) after a "
                       "stall or a dropped connection (0: never)"),
                 live),
      [] {
        auto s = row(
            "map", "a|a:N|a:LANG|s|s:N|s:LANG",
            "keep only the audio and subtitle tracks named (repeatable): by type, by number "
            "among that type's from 0, or by language, e.g. --map a:1 (the second audio track), "
            "--map a:eng --map s:eng; FFmpeg's 0:a:1 is taken too; the others are left out and "
            "the report names them (default: every track)",
            [](O& o, const std::string& v) {  // each call adds one
              o.maps.push_back(parse_track_selector(v).text);
            },
            [](const O& o) { return joined(o.maps); });
        s.form = Form::kRepeatable;
        s.alias = "maps";
        return s;
      }(),
      [] {
        auto s = row(
            "input_option", "KEY=VALUE",
            "passed to FFmpeg when opening the input (repeatable; a config or Python takes a "
            "list), e.g. rtsp_transport=tcp, or localaddr=… for udp",
            [](O& o, const std::string& kv) {  // each call adds one
              if (const auto eq = kv.find('='); eq == std::string::npos || eq == 0)
                throw usage_error(fmt::format(" {}: expected key=value", kv));
              o.input_options.push_back(kv);
            },
            [](const O& o) { return joined(o.input_options); });
        s.form = Form::kRepeatable;
        s.alias = "input_options";
        return s;
      }(),
      yes_no("read_stamps", &O::read_stamps, Form::kSwitch,
             "read the time a sender's 'stamp' filter wrote into each picture: glass-to-glass "
             "latency (p50/p99/max) in the report"),
  };
}

std::vector<OptionSpec> streams_rows() {
  // A stream of vpipe run is one pipeline; run places streams on GPUs itself (run --gpus).
  constexpr unsigned kOneRun = kCommandLine | kPython;
  return {
      only(count("streams", &O::streams, 1, 256,
                 "run N copies of the pipeline at once in this process, sharing one device "
                 "memory strategy per GPU (outputs OUT-1, OUT-2…; null writes nothing); "
                 "statistics per stream"),
           kOneRun),
      only(row(
               "gpus", "all|N|LIST",
               "the GPUs the streams are placed on, by headroom: all, a count (2: the first two), "
               "or a list (0,1; '1,' is device 1 alone); each GPU has its own mem strategy and "
               "budget",
               [](O& o, const std::string& v) { o.gpus = visible_gpus(v); },
               [](const O& o) {
                 std::vector<std::string> ids;
                 for (const int d : o.gpus) ids.push_back(std::to_string(d));
                 return joined(ids);
               }),
           kOneRun),
      only(choice("on_gpu_error", &O::on_gpu_error,
                  "several streams: a stream that fails with a CUDA error on its GPU (out of "
                  "memory after the retries, a device fault) stops (fail), or starts again from "
                  "the beginning on the GPU with the most headroom, that GPU taking no more "
                  "streams (move; the report notes each move); other streams never stop"),
           kOneRun),
  };
}

const std::set<std::string, std::less<>> kPerOutput = {
    "filters", "encoder",        "crf",           "preset",         "qscale",
    "audio",   "audio_codec",    "audio_bitrate", "audio_channels", "audio_rate",
    "bitrate", "maxrate",        "bufsize",       "profile",        "level",
    "pix_fmt", "encoder_option", "gop",           "encode_threads", "encode_segments",
    "fit"};

// FFmpeg's tool's names for the options, so that `-t 3` is answered with `--duration 3`.
const std::vector<std::pair<std::string_view, std::vector<std::string>>> kFfmpegSpellings = {
    {"duration", {"-t"}},
    {"ss", {"-ss"}},
    {"to", {"-to"}},
    {"filters", {"-vf", "-filter:v", "-filter_complex"}},
    {"encoder", {"-c:v", "-vcodec", "-codec:v"}},
    {"crf", {"-crf"}},
    {"preset", {"-preset"}},
    {"qscale", {"-q:v", "-qscale:v"}},
    {"bitrate", {"-b:v"}},
    {"maxrate", {"-maxrate", "-maxrate:v"}},
    {"bufsize", {"-bufsize", "-bufsize:v"}},
    {"profile", {"-profile:v"}},
    {"level", {"-level", "-level:v"}},
    {"pix_fmt", {"-pix_fmt"}},
    {"gop", {"-g"}},
    {"audio_codec", {"-c:a", "-acodec", "-codec:a"}},
    {"audio_bitrate", {"-b:a"}},
    {"audio_channels", {"-ac"}},
    {"audio_rate", {"-ar"}},
    {"map", {"-map"}},
    {"max_frames", {"-frames:v", "-vframes"}},
    {"copyts", {"-copyts"}},
    {"encode_threads", {"-threads"}},
};

}  // namespace

// The groups of rows, in the order --help lists them.
const std::vector<OptionSpec>& option_schema() {
  static const std::vector<OptionSpec> rows = [] {
    std::vector<OptionSpec> all;
    for (auto group : {io_rows, ladder_rows, cut_rows, cuda_rows, encoder_rows, rate_rows,
                       reading_rows, live_rows, streams_rows})
      for (auto& r : group()) all.push_back(std::move(r));
    for (auto& r : all)  // what one output of several may set (OUT:key=value)
      r.per_output = kPerOutput.count(r.key) > 0;
    for (const auto& [name, spellings] : kFfmpegSpellings) {
      const std::string_view key = name;  // (clang 14 captures no structured binding)
      const auto row = std::find_if(all.begin(), all.end(), [&](auto& r) { return r.key == key; });
      if (row == all.end())
        throw std::logic_error(fmt::format("FFmpeg spelling of no key {}", key));
      row->ffmpeg = spellings;
    }
    return all;
  }();
  return rows;
}

const OptionSpec* find_option(std::string_view key) {
  const auto& rows = option_schema();
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const OptionSpec& s) {
    return key == s.key || (!s.alias.empty() && key == s.alias);
  });
  return it == rows.end() ? nullptr : &*it;
}

const OptionSpec* find_ffmpeg_spelling(std::string_view arg) {
  for (const auto& s : option_schema())
    if (std::find(s.ffmpeg.begin(), s.ffmpeg.end(), arg) != s.ffmpeg.end()) return &s;
  return nullptr;
}

void set_option(TranscodeOptions& o, std::string_view key, const std::string& value,
                std::string_view where, FrontEnd front_end) {
  const OptionSpec* s = find_option(key);
  if (!s || !(s->front_ends & front_end)) {
    std::string known;
    for (const auto& each : option_schema())
      if (each.front_ends & front_end) known += (known.empty() ? "" : ", ") + each.key;
    if (!s)
      throw usage_error(fmt::format("{}: unknown option '{}' (known: {})", where, key, known));
    throw usage_error(fmt::format(
        "{}: option '{}' is for one run of several streams (vpipe transcode, Python); a stream "
        "of vpipe run is one pipeline, placed by vpipe run itself, with the gpus and on-gpu-error "
        "of its own command line (known: {})",
        where, key, known));
  }
  try {
    s->set(o, value);
  } catch (const usage_error& e) {
    throw usage_error(fmt::format("{}: {}{}", where, key, e.what()));  // "where: crf 99: outside"
  }
}

void set_option(TranscodeOptions& o, std::string_view key, const std::vector<std::string>& values,
                std::string_view where, FrontEnd front_end) {
  const OptionSpec* s = find_option(key);
  if (!s) set_option(o, key, std::string(), where, front_end);  // throws: lists the known keys
  if (s->form != Form::kRepeatable)
    throw usage_error(fmt::format("{}: '{}' takes one value", where, key));
  for (const auto& v : values) set_option(o, key, v, where, front_end);
}

TranscodeOptions output_options(const TranscodeOptions& top, const std::string& spec) {
  // Where each ":key=" starts, for keys an output may set.
  std::vector<std::size_t> cuts;
  for (std::size_t at = spec.find(':'); at != std::string::npos; at = spec.find(':', at + 1)) {
    const auto eq = spec.find('=', at + 1);
    if (eq == std::string::npos) break;
    std::string key = spec.substr(at + 1, eq - at - 1);
    std::replace(key.begin(), key.end(), '-', '_');  // encode-segments, as the flag spells it
    const OptionSpec* s = find_option(key);
    // ":word=" right after the path that names no key is a misspelt one ("b.mkv:bogus=1"
    // became a file of that name); after a key it is that key's value ("vf=resize=…:interp=…").
    if (!s && cuts.empty() && !key.empty() &&
        key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string_view::npos)
      throw usage_error(
          fmt::format("output {}: '{}' is not an option ('vpipe options' lists the "
                      "keys an output takes); a file whose name holds ':{}=': "
                      "rename it",
                      spec, key, key));
    if (s && s->per_output) cuts.push_back(at);
    if (s && s->form == Form::kPositional)  // "b.mkv:output=c.mkv" wrote a file of that name
      throw usage_error(
          fmt::format("output {}: '{}' is not an output's key; the path goes first "
                      "(PATH:key=value…)",
                      spec, key));
    if (s && !s->per_output && s->form != Form::kPositional)
      throw usage_error(
          fmt::format("output {}: '{}' is the run's option, not one output's: give "
                      "it once, for the run ({})",
                      spec, key, s->key));
  }
  TranscodeOptions o = top;
  o.outputs.clear();
  o.output = spec.substr(0, cuts.empty() ? spec.size() : cuts.front());
  if (o.output.empty()) throw usage_error(fmt::format("output {}: no path before the keys", spec));
  o.filters.clear();  // an output's chain is its own
  cuts.push_back(spec.size());
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const std::string kv = spec.substr(cuts[k] + 1, cuts[k + 1] - cuts[k] - 1);
    const auto eq = kv.find('=');
    std::string key = kv.substr(0, eq);
    std::replace(key.begin(), key.end(), '-', '_');
    set_option(o, key, kv.substr(eq + 1), fmt::format("output {}", o.output), kCommandLine);
  }
  return o;
}

std::string rendition_path(const TranscodeOptions& top, const std::string& name) {
  const char* flag = top.hls.empty() ? "dash" : "hls";
  const bool plain = !name.empty() && name != "." && name != ".." &&
                     name.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_-.") == std::string::npos;
  if (plain && (name[0] == '.' || name == "master.m3u8" || name == "manifest.mpd"))
    throw usage_error(
        fmt::format("{}: '{}' would be the ladder's own file or folder (its master, "
                    "or a hidden staging folder); name the rendition e.g. 720p",
                    flag, name));
  if (!plain)
    throw usage_error(
        fmt::format("{}: '{}' is not a rendition name (letters, digits, _-. "
                    "only): with {} each output names a rendition, e.g. 720p",
                    flag, name, flag));
  return (std::filesystem::path(ladder_dir(top)) / name /
          (top.hls.empty() ? "manifest.mpd" : "index.m3u8"))
      .string();
}

std::vector<TranscodeOptions> output_list(const TranscodeOptions& top) {
  if (!top.hls.empty() && !top.dash.empty())
    throw usage_error("hls and dash: one ladder a run; write the other in a second run");
  std::vector<TranscodeOptions> all{output_options(top, top.output)};  // "one.mp4:encoder=…" too
  for (const auto& spec : top.outputs) all.push_back(output_options(top, spec));
  if (!top.filters.empty())  // the run's chain first, then each output's own
    for (auto& o : all) o.filters = top.filters + (o.filters.empty() ? "" : "," + o.filters);
  if (!ladder_dir(top).empty())
    for (auto& o : all) o.output = rendition_path(top, o.output);
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (all[i].output == all[j].output && all[i].output != "null")
        throw usage_error(fmt::format("{}: named as two outputs", all[i].output));
  return all;
}

namespace {
std::string cell(std::string text) {  // a '|' would end the table cell
  for (std::size_t at = 0; (at = text.find('|', at)) != std::string::npos; at += 2)
    text.replace(at, 1, "\\|");
  return text;
}
}  // namespace

std::string option_table_markdown() {
  std::string out =
      "| key | command line | value | default | applies to | config, Python | what it does |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const auto& s : option_schema()) {
    const auto d = s.default_text();
    out += fmt::format(
        "| `{}`{} | `{}` | {} | {} | {} | {} | {} |\n", s.key,
        s.alias.empty() ? "" : fmt::format(" (`{}`)", s.alias), s.flag,
        s.value.empty() ? "switch" : cell(fmt::format("`{}`", s.value)),
        d.empty() ? "-" : fmt::format("`{}`", d),
        (s.applies.empty() ? std::string("all") : s.applies) + (s.per_output ? ", per output" : ""),
        (s.front_ends & kConfig) ? "both" : "Python only", cell(s.help));
  }
  return out;
}

}  // namespace vpipe
