// What a transcode is asked to do: the options, typed, as data only
// (TranscodeOptions), and how the caller is wired to the run (RunHooks). Every
// option is set by name through the one schema (option_schema.hpp), which the
// command line, vpipe run's config and the Python package all read; each enum
// has one table of names (EnumNames) that the schema and the report print.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/memory/pinned_ring.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/graph/queue.hpp"

namespace vpipe {

class MemoryStrategy;
class LiveRegistry;

enum class Device { kAuto, kCpu, kCuda };
enum class Decode { kAuto, kCpu, kNvdec };
// How FFmpeg drives NVDEC: its hwaccel (FFmpeg's own parser on the CPU, `-hwaccel cuda`)
// or its cuvid decoders (NVIDIA's parser: h264_cuvid, hevc_cuvid…, `-c:v hevc_cuvid`);
// auto chooses per run (nvdec_api_for in codec_open.hpp).
enum class NvdecApi { kAuto, kHwaccel, kCuvid };
enum class Drop { kAuto, kBlock, kDropOldest, kDropNewest };
// A picture size the encoder cannot take (odd, for 4:2:0): pad it, crop it, or stop.
enum class Fit { kPad, kCrop, kError };
// The input's audio: copied where the container holds its codec, else
// re-encoded (auto); always copied (copy: a codec the container refuses
// fails); always re-encoded (encode); left out (none).
enum class AudioMode { kAuto, kCopy, kEncode, kNone };
// Several streams on several GPUs: a stream that fails with a CUDA error on its GPU stops
// (fail), or starts again on another GPU, that GPU taking no more streams (move).
enum class OnGpuError { kFail, kMove };

// One table per enum: the name a user types, the value.
template <class E>
struct EnumNames;
template <>
struct EnumNames<Device> {
  static constexpr std::array<std::pair<std::string_view, Device>, 3> table{
      {{"auto", Device::kAuto}, {"cpu", Device::kCpu}, {"cuda", Device::kCuda}}};
};
template <>
struct EnumNames<Decode> {
  static constexpr std::array<std::pair<std::string_view, Decode>, 3> table{
      {{"auto", Decode::kAuto}, {"cpu", Decode::kCpu}, {"nvdec", Decode::kNvdec}}};
};
template <>
struct EnumNames<NvdecApi> {
  static constexpr std::array<std::pair<std::string_view, NvdecApi>, 3> table{
      {{"auto", NvdecApi::kAuto}, {"hwaccel", NvdecApi::kHwaccel}, {"cuvid", NvdecApi::kCuvid}}};
};
template <>
struct EnumNames<Drop> {
  static constexpr std::array<std::pair<std::string_view, Drop>, 4> table{
      {{"auto", Drop::kAuto},
       {"block", Drop::kBlock},
       {"drop-oldest", Drop::kDropOldest},
       {"drop-newest", Drop::kDropNewest}}};
};
template <>
struct EnumNames<Fit> {
  static constexpr std::array<std::pair<std::string_view, Fit>, 3> table{
      {{"pad", Fit::kPad}, {"crop", Fit::kCrop}, {"error", Fit::kError}}};
};
template <>
struct EnumNames<AudioMode> {
  static constexpr std::array<std::pair<std::string_view, AudioMode>, 4> table{
      {{"auto", AudioMode::kAuto},
       {"copy", AudioMode::kCopy},
       {"encode", AudioMode::kEncode},
       {"none", AudioMode::kNone}}};
};
template <>
struct EnumNames<OnGpuError> {
  static constexpr std::array<std::pair<std::string_view, OnGpuError>, 2> table{
      {{"fail", OnGpuError::kFail}, {"move", OnGpuError::kMove}}};
};
template <>
struct EnumNames<Strategy> {  // mem: memory/strategy.hpp's one table
  static constexpr const auto& table = kStrategyNames;
};
template <>
struct EnumNames<HostMemory> {  // --host: the staging kinds a user picks
  static constexpr std::array<std::pair<std::string_view, HostMemory>, 2> table{
      {{"pinned", HostMemory::kPinned}, {"pageable", HostMemory::kPageable}}};
};

template <class E>
[[nodiscard]] constexpr std::string_view name_of(E value) {
  for (const auto& [name, v] : EnumNames<E>::table)
    if (v == value) return name;
  return "?";
}
// The value named `name`; throws input_error naming `what` and the choices.
template <class E>
[[nodiscard]] E from_name(std::string_view name, std::string_view what) {
  std::string choices;
  for (const auto& [n, v] : EnumNames<E>::table) {
    if (n == name) return v;
    choices += (choices.empty() ? "" : ", ") + std::string(n);
  }
  throw input_error(std::string(what) + " " + std::string(name) + ": expected one of " + choices);
}
// name → value, as CLI11's CheckedTransformer takes it.
template <class E>
[[nodiscard]] std::vector<std::pair<std::string, E>> names_of() {
  std::vector<std::pair<std::string, E>> out;
  for (const auto& [name, v] : EnumNames<E>::table) out.emplace_back(std::string(name), v);
  return out;
}

struct TranscodeProgress {
  std::int64_t frames_done = 0;
  std::int64_t frames_total = 0;  // estimate; 0 = unknown
  double elapsed_s = 0;
};

// What the user asks for. Each field is one row of the option schema
// (option_schema.cpp: its key, range, help and where it applies); the
// defaults here are the ones every front end shows.
struct TranscodeOptions {
  std::string input;
  std::string output;
  std::string filters;  // the filter chain ("resize=1280x720,blur=sigma=1.5")
  // More outputs from the same decode: "PATH[:key=value…]" each, the keys those an
  // output may set (OptionSpec::per_output); `output` may then carry keys too.
  std::vector<std::string> outputs;
  // An HLS ladder: each output's PATH names a rendition, written as
  // hls/NAME/index.m3u8 with segments of segment_s seconds, keyframes forced at
  // the same times in every rendition, and hls/master.m3u8 listing them.
  std::string hls;
  // A DASH ladder, the same way: dash/NAME/manifest.mpd (fragmented MP4
  // segments) per rendition, and dash/manifest.mpd with every rendition.
  std::string dash;
  double segment_s = 4.0;
  Device device = Device::kAuto;          // auto: the CUDA path where a device is usable
  Decode decode = Decode::kAuto;          // auto: NVDEC when frames go to a CUDA filter
  NvdecApi nvdec_api = NvdecApi::kAuto;   // with NVDEC: FFmpeg's hwaccel or its cuvid decoders
  Strategy mem = Strategy::kPool;         // device memory strategy
  HostMemory host = HostMemory::kPinned;  // host staging
  std::string encoder = "auto";  // auto (h264_nvenc if usable, else libx264) or any FFmpeg encoder
  // Quality and speed, each applied as the encoder's row says (encoder_controls.hpp) or
  // refused; unset: vpipe's default for that encoder (libx264: crf 23, preset veryfast).
  std::optional<double> crf;  // constant quality, 0 (lossless) .. the encoder's worst
  std::string preset;         // the encoder's speed preset
  std::optional<int> qscale;  // a fixed quantizer, 2 (best) .. 31 (MPEG-4 part 2 and its kin)
  int gop = 0;  // frames from one keyframe to the next, at most (0: the encoder's default)
  // Rate control (bits per second; unset: the encoder's quality mode).
  std::optional<std::int64_t> bitrate, maxrate, bufsize;
  std::string profile, level;  // the encoder's (empty: its default)
  std::string pix_fmt;         // what the encoder takes (empty: the chain's, or its nearest)
  // "key=value": any option of the encoder, private ones included, set at open;
  // one the encoder does not know fails the open (before the first frame).
  std::vector<std::string> encoder_options;
  int encode_threads = 0;  // the video encoder's threads (0: the encoder chooses)
  // Encoders encoding segments (GOPs) of the output at once (>1:
  // segment_encode.hpp), each with encode_threads or its share of the cores.
  int encode_segments = 1;
  Fit fit = Fit::kPad;  // a size the encoder cannot take: pad, crop or error
  AudioMode audio = AudioMode::kAuto;
  std::string audio_codec;  // re-encoding: this encoder (empty: the container's usual)
  std::optional<std::int64_t> audio_bitrate;  // re-encoding: bits per second (unset: the encoder's)
  std::optional<int> audio_channels;  // re-encoding: mixed to this many (unset: the input's)
  std::optional<int> audio_rate;      // re-encoding: resampled to this (unset: the input's)
  // The first of the audio options that only an encode applies (audio_codec, audio_bitrate,
  // audio_channels, audio_rate) given, or empty: with --audio auto one makes it encode.
  [[nodiscard]] std::string audio_encode_option() const {
    if (!audio_codec.empty()) return "audio_codec";
    if (audio_bitrate) return "audio_bitrate";
    if (audio_channels) return "audio_channels";
    return audio_rate ? "audio_rate" : "";
  }
  std::optional<std::int64_t> max_frames;
  // A cut (io/cut.hpp), exact to the frame: from start_s (seconds after the
  // input's start) or frame start_frame (0: the first shown), to end_s, to
  // frame end_frame (not included), or for duration_s. At most one of each
  // side; a live input takes a duration only. The output starts at zero unless
  // copyts keeps the input's timestamps.
  std::optional<double> start_s, end_s, duration_s;
  std::optional<std::int64_t> start_frame, end_frame;
  bool copyts = false;
  // One picture at this time: --ss T --frames 1 (settle_pictures), alone of the cut options.
  std::optional<double> thumbnail_s;
  // With encoder copy and a cut: copy the GOPs inside it, re-encode its edges (smart_cut.hpp).
  bool smart_cut = false;
  [[nodiscard]] bool has_cut() const {
    return start_s || end_s || duration_s || start_frame || end_frame;
  }
  std::size_t queue_depth = 8;  // frames in flight between two stages
  int decode_threads = 0;       // 0: FFmpeg chooses
  // Decoder sessions decoding segments (GOPs) of the input at once (>1:
  // segment_decode.hpp); each NVDEC session can run on its own engine.
  // kAutoSessions: chosen per input (TranscodeSession: NVDEC with idle engines
  // → kAutoNvdecSessions, else 1).
  int decode_sessions = 1;
  static constexpr int kAutoSessions = 0;
  // The H200's measurement (RESULTS, bench decode): 4–7 sessions gave the same
  // whole-run rate on 1080p H.264, 4 with the least memory in flight.
  static constexpr int kAutoNvdecSessions = 4;
  std::size_t segment_packets =
      0;  // a segment's most packets before one session takes over (0: 120 NVDEC, 600 CPU)
  bool keep_partial = false;  // keep the output file when the run fails
  bool realtime = false;      // pace the input at its native rate
  int loop = 1;               // read the input this many times over
  // Full frame queue: block, drop-oldest or drop-newest; auto: block for a
  // file, drop-newest for a live input (latency must stay bounded).
  Drop drop = Drop::kAuto;
  // At most this many frames between the decoder and the end (0: no limit
  // but the queues'); at the limit the decoder waits (block) or drops.
  std::size_t max_in_flight = 0;
  // Live inputs (udp://, rtp://, srt://, rtsp://, rtmp://, tcp://): opened
  // with low-latency options; a read that waits past stall_timeout_s ends the
  // input (the output is finalized), or reconnects up to `reconnect` times
  // where the protocol has connections.
  double stall_timeout_s = 5.0;
  int reconnect = 3;
  // The audio and subtitle tracks each output keeps, by selector (io/track_map.hpp: "a:1",
  // "a:eng", "s"); empty: every one.
  std::vector<std::string> maps;
  std::vector<std::string> input_options;  // "key=value", passed to FFmpeg when opening the input
  // Read each frame's stamp (written by a sender's `stamp` filter) before
  // encoding: glass-to-glass latency in the report.
  bool read_stamps = false;
  std::optional<std::size_t> budget;  // CUDA path: device memory cap for the strategy (per GPU)
  // Copies of the pipeline at once in one process (transcode_streams), and the
  // devices they are placed on (empty: the current one).
  int streams = 1;
  std::vector<int> gpus;
  OnGpuError on_gpu_error = OnGpuError::kFail;  // several streams: a CUDA error on a stream's GPU
  bool download_copy = false;                   // A/B: copy downloads out of the slot (older way)
  // The CUDA path: each run of CUDA filters as one stage launching one CUDA
  // Graph per frame (cuda_graph.hpp) instead of a stage and launches per filter.
  bool graphs = false;
};

// --hls DIR or --dash DIR: the ladder's folder (empty: no ladder).
[[nodiscard]] inline const std::string& ladder_dir(const TranscodeOptions& o) {
  return o.hls.empty() ? o.dash : o.hls;
}

// How the caller is wired to a run: none of it is the user's choice, so none
// of it is in the options or the schema.
struct RunHooks {
  const std::atomic<int>* interrupt = nullptr;                // non-zero: stop gracefully (SIGINT)
  std::function<void(const TranscodeProgress&)> on_progress;  // ~4 times a second
  // Output "null": each frame at the end, valid during the call only (its
  // memory may be a staging slot that goes back to its ring): copy to keep.
  std::function<void(const Frame&)> on_frame;
  // Output "null": leave frames where the chain ends (on the CUDA path, device
  // frames in strategy memory) instead of downloading them; a
  // copy of the Frame taken in on_frame keeps its memory (the Python frames).
  bool frames_on_device = false;
  // A metrics endpoint's view of the run while it goes on (live.hpp), and
  // this run's name there ("1"; several streams: 1..N).
  LiveRegistry* live = nullptr;
  std::string stream_label = "1";
  // Several pipelines in one process: the memory strategy they share. Null:
  // the run makes its own from the options' mem and budget.
  MemoryStrategy* shared_memory = nullptr;
};

}  // namespace vpipe
