#include "vpipe/pipeline/session/smart_cut.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/avc_config.hpp"
#include "vpipe/pipeline/io/cut.hpp"
#include "vpipe/pipeline/io/join.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/run_files.hpp"
#include "vpipe/pipeline/session/option_schema.hpp"
#include "vpipe/pipeline/session/stream_copy.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

namespace vpipe {

namespace {

// The options a smart cut's edges take from the user's (the rest are the source's or fixed):
// their coding's quality and speed, and where they are decoded.
constexpr std::string_view kEdgeOptions[] = {"crf",    "preset",    "encode_threads", "device",
                                             "decode", "nvdec_api", "decode_threads", "mem",
                                             "host"};

}  // namespace

bool edge_option(std::string_view key) {
  return std::find(std::begin(kEdgeOptions), std::end(kEdgeOptions), key) != std::end(kEdgeOptions);
}

namespace {

// What the cut reads from the input before anything is written.
struct CutSource {
  AVRational time_base{0, 1};
  double origin_s = 0;  // the input's start: a cut's times count from it
  Cut cut;              // in the video stream's clock (seconds)
  AvcConfig config;
  std::string profile, level, pix_fmt;  // for the edges' encoder: the source's
  std::vector<VideoPacketFacts> packets;
  std::int64_t from = 0, until = INT64_MAX;  // the frames kept, shown in [from, until) (ticks)
  [[nodiscard]] double seconds(std::int64_t ticks) const {
    return static_cast<double>(ticks) * av_q2d(time_base);
  }
};

// The profile name libx264 takes for the source's, or a usage_error naming it.
std::string x264_profile(const AVCodecParameters* par, const std::string& input) {
  switch (par->profile & 0xff) {  // the constrained flag (bit 9) aside
    case 66:
      return "baseline";
    case 77:
      return "main";
    case 100:
      return "high";
    default:
      break;
  }
  const char* name = avcodec_profile_name(par->codec_id, par->profile);
  throw usage_error(fmt::format(
      "{}: smart_cut re-encodes the edges with libx264 in the source's profile, and takes "
      "8-bit 4:2:0 H.264 (Baseline, Main or High); this one is {}: cut it with a re-encode "
      "(leave encoder copy out)",
      input, name ? name : std::to_string(par->profile)));
}

// The input's stream facts, each a usage_error when a smart cut cannot take it.
void read_stream_facts(const AVStream* s, const std::string& input, CutSource& src) {
  const AVCodecParameters* par = s->codecpar;
  if (par->codec_id != AV_CODEC_ID_H264)
    throw usage_error(fmt::format(
        "{}: smart_cut copies H.264 and re-encodes its edges with libx264; this video is {}: "
        "cut it with a re-encode (leave encoder copy out)",
        input, avcodec_get_name(par->codec_id)));
  const auto config = parse_avc_config(
      {par->extradata, static_cast<std::size_t>(std::max(par->extradata_size, 0))}, input);
  if (!config)
    throw usage_error(fmt::format(
        "{}: its H.264 carries its parameter sets in the stream (as MPEG-TS does), not in a "
        "header; smart_cut takes MP4, MOV or Matroska inputs: cut it with a re-encode (leave "
        "encoder copy out)",
        input));
  src.config = *config;
  src.profile = x264_profile(par, input);
  src.level = par->level == 9 ? "1b" : fmt::format("{}.{}", par->level / 10, par->level % 10);
  const auto fmt = static_cast<AVPixelFormat>(par->format);
  if (fmt != AV_PIX_FMT_YUV420P && fmt != AV_PIX_FMT_YUVJ420P)
    throw usage_error(fmt::format("{}: smart_cut takes 8-bit 4:2:0 H.264; this one is {}", input,
                                  av_get_pix_fmt_name(fmt) ? av_get_pix_fmt_name(fmt) : "unknown"));
  src.pix_fmt = av_get_pix_fmt_name(fmt);
  if (par->width % 2 || par->height % 2)
    throw usage_error(
        fmt::format("{}: {}x{}, an odd size, which libx264 cannot code in 4:2:0 "
                    "for smart_cut's edges: cut it with a re-encode",
                    input, par->width, par->height));
  const bool fields = std::any_of(config->sps.begin(), config->sps.end(),
                                  [](const Bytes& sps) { return !sps_frames_only(sps); });
  if (fields || (par->field_order != AV_FIELD_PROGRESSIVE && par->field_order != AV_FIELD_UNKNOWN))
    throw usage_error(fmt::format(
        "{}: interlaced; smart_cut's edges would be coded as frames: cut it with a re-encode",
        input));
  src.time_base = s->time_base;
}

// Opens the input: its stream facts, the cut in its clock, and every video packet's pts and
// whether it starts an IDR picture (packets only, not decoded).
CutSource read_source(const TranscodeOptions& o) {
  CutSource src;
  UniqueDemuxContext in = open_input(o.input);
  const int v = av_find_best_stream(in.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (v < 0) throw input_error(fmt::format("{}: no video stream", o.input));
  read_stream_facts(in->streams[v], o.input, src);
  src.origin_s = input_origin_s(in.get());
  src.cut =
      resolve_cut({o.start_s, o.end_s, o.duration_s, o.start_frame, o.end_frame, false}, in.get(),
                  v, false, [&]() -> UniqueDemuxContext { return open_input(o.input); });
  src.from = first_tick_at(src.cut.start.value_or(src.origin_s), src.time_base);
  if (src.cut.end) src.until = first_tick_at(*src.cut.end, src.time_base);
  for (unsigned i = 0; i < in->nb_streams; ++i)
    if (static_cast<int>(i) != v) in->streams[i]->discard = AVDISCARD_ALL;
  // From the keyframe before the cut (an earlier GOP shows nothing inside it) to a little past
  // its end: the packets a decoder may still hold back there, read to see the GOP close.
  seek_before_or_start(in, o.input, v, src.seconds(src.from));
  for (unsigned i = 0; i < in->nb_streams; ++i)  // (opened again: the streams' flags anew)
    if (static_cast<int>(i) != v) in->streams[i]->discard = AVDISCARD_ALL;
  constexpr std::size_t kPastTheEnd = 256;
  std::size_t past_end = 0;
  UniqueAVPacket pkt = make_av_packet();
  for (; past_end < kPastTheEnd && av_read_frame(in.get(), pkt.get()) >= 0;
       av_packet_unref(pkt.get())) {
    if (pkt->stream_index != v) continue;
    if (past_end > 0 || pkt->pts >= src.until) ++past_end;
    if (pkt->pts == AV_NOPTS_VALUE)  // refused before anything is written, as a usage
      throw usage_error(fmt::format(
          "{}: video packet {} has no time (its container, {}, does not say when each frame "
          "shows): smart_cut cannot place it; cut it with a re-encode",
          o.input, src.packets.size(), in->iformat->name));
    src.packets.push_back(
        {pkt->pts,
         (pkt->flags & AV_PKT_FLAG_KEY) != 0 &&
             starts_idr({pkt->data, static_cast<std::size_t>(pkt->size)}, src.config.length_size)});
  }
  return src;
}

// A private folder for the edges, removed with what is in it.
class EdgeFolder {
 public:
  EdgeFolder() {
    std::string t = (std::filesystem::temp_directory_path() / "vpipe-smart-cut-XXXXXX").string();
    if (!::mkdtemp(t.data()))
      throw input_error(fmt::format("{}: cannot make a folder for the cut's edges", t));
    path_ = t;
  }
  EdgeFolder(const EdgeFolder&) = delete;
  EdgeFolder& operator=(const EdgeFolder&) = delete;
  ~EdgeFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] std::string file(const char* name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The options that re-encode frames (their cut is the caller's) as the source codes them,
// with parameter set ids of their own (`id`).
TranscodeOptions edge_options(const TranscodeOptions& o, const CutSource& src,
                              const std::string& output, int id) {
  TranscodeOptions e;
  e.input = o.input;
  e.output = output;
  e.encoder = "libx264";
  e.profile = src.profile;
  e.level = src.level;
  e.pix_fmt = src.pix_fmt;
  // No reordering: the edge's decode times fit before the copied GOP's (join.hpp).
  e.encoder_options = {fmt::format("x264-params=sps-id={}:bframes=0", id)};
  for (const OptionSpec& s : option_schema())  // the user's, as kEdgeOptions names them
    if (edge_option(s.key) && s.get(o) != s.default_text()) s.set(e, s.get(o));
  e.audio = AudioMode::kNone;
  return e;
}

}  // namespace

SmartCutPlan plan_smart_cut(const std::vector<VideoPacketFacts>& packets, std::int64_t from,
                            std::int64_t until) {
  const std::size_t n = packets.size();
  // A clean keyframe: an IDR that no packet after it shows before it, none before it after.
  std::vector<std::int64_t> later_min(n + 1, INT64_MAX);
  for (std::size_t i = n; i-- > 0;) later_min[i] = std::min(later_min[i + 1], packets[i].pts);
  std::vector<std::int64_t> clean;
  std::int64_t earlier_max = INT64_MIN;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t t = packets[i].pts;
    if (packets[i].idr && earlier_max < t && later_min[i + 1] >= t) clean.push_back(t);
    earlier_max = std::max(earlier_max, t);
  }
  SmartCutPlan p;
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& k : packets)
    if (k.pts >= from && k.pts < until) first = std::min(first, k.pts);
  for (const auto& k : packets) last = std::max(last, k.pts);
  if (first == INT64_MAX) throw input_error("the cut holds no frame of the input");
  p.first = first;
  const auto in = std::lower_bound(clean.begin(), clean.end(), from);
  if (in == clean.end() || *in >= until) return p;  // no whole GOP inside: all re-encoded
  if (until > last) {
    p.copy_from = *in;  // to the end of the input
  } else {
    const auto out = std::upper_bound(clean.begin(), clean.end(), until);  // past the last ≤
    if (out - in < 2) return p;  // no second clean keyframe inside to stop the copy at
    p.copy_from = *in;
    p.copy_until = *(out - 1);
  }
  p.head = first < *p.copy_from;
  if (p.copy_until)
    p.tail = std::any_of(packets.begin(), packets.end(), [&](const VideoPacketFacts& k) {
      return k.pts >= *p.copy_until && k.pts < until;
    });
  return p;
}

namespace {

// An edge re-encoded (edge_options), and its file's avcC (its sets). Ctrl-C: what was
// encoded is whole (the report says it stopped); nullopt when it stopped before a frame.
std::optional<AvcConfig> encode_edge(const TranscodeOptions& e, const RunHooks& hooks,
                                     TranscodeReport& report) {
  const std::string& path = e.output;
  RunHooks edge;
  edge.interrupt = hooks.interrupt;
  TranscodeReport r;
  try {
    r = transcode(e, edge);
  } catch (const input_error&) {
    if (!(hooks.interrupt && hooks.interrupt->load())) throw;
    report.interrupted = true;  // Ctrl-C before its first frame: no edge, no error
    return std::nullopt;
  }
  report.frames_decoded += r.frames_decoded;
  report.frames_encoded += r.frames_encoded;
  report.interrupted = report.interrupted || r.interrupted;
  report.decode = r.decode;
  if (report.device == "none") report.device = r.device;
  UniqueDemuxContext in = open_input(path);
  const AVCodecParameters* par = in->streams[0]->codecpar;
  auto config = parse_avc_config(
      {par->extradata, static_cast<std::size_t>(std::max(par->extradata_size, 0))}, path);
  if (!config) throw logic_error(fmt::format("{}: libx264 wrote no avcC header", path));
  return config;
}

// The whole cut re-encoded: no GOP lies wholly inside it.
TranscodeReport reencode_all(const TranscodeOptions& o, const CutSource& src,
                             const RunHooks& hooks) {
  TranscodeOptions e = edge_options(o, src, o.output, 0);
  e.encoder_options.clear();
  e.audio = o.audio;
  e.start_s = o.start_s;  // the user's cut, as asked
  e.end_s = o.end_s;
  e.duration_s = o.duration_s;
  e.start_frame = o.start_frame;
  e.end_frame = o.end_frame;
  TranscodeReport r = transcode(e, hooks);
  r.notes.emplace_back(
      "smart cut: no whole GOP (closed, from an IDR keyframe) lies inside the cut, so all of "
      "it was re-encoded");
  return r;
}

}  // namespace

void check_smart_cut(const TranscodeOptions& o) {
  if (!o.has_cut())
    throw usage_error(
        "smart_cut: give a cut (ss, to, duration, ss_frame or to_frame); without one, encoder "
        "copy copies all of the input");
}

namespace {

// Two parameter set ids no set of the source has (the edges'): the smallest free.
std::pair<int, int> edge_ids(const AvcConfig& source, const std::string& input) {
  std::vector<bool> used(32, false);
  for (const auto& s : source.sps) used[static_cast<std::size_t>(sps_id(s) & 31)] = true;
  for (const auto& s : source.pps)
    if (const int id = pps_id(s); id < 32) used[static_cast<std::size_t>(id)] = true;
  std::vector<int> free;
  for (int id = 0; id < 32 && free.size() < 2; ++id)
    if (!used[static_cast<std::size_t>(id)]) free.push_back(id);
  if (free.size() < 2)
    throw usage_error(fmt::format(
        "{}: its parameter sets take every id the edges could have: cut it with a re-encode",
        input));
  return {free[0], free[1]};
}

// What a smart cut leaves out of the input (it copies video and audio), for the report.
std::string left_out(const std::string& input) {
  const UniqueDemuxContext in = open_input(input);
  int others = 0;
  for (unsigned i = 0; i < in->nb_streams; ++i) {
    const AVMediaType t = in->streams[i]->codecpar->codec_type;
    const bool cover = in->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC;
    others += (t != AVMEDIA_TYPE_VIDEO && t != AVMEDIA_TYPE_AUDIO) || cover;
  }
  return others == 0 ? std::string()
                     : fmt::format(
                           "smart cut: {} subtitle, data or picture stream{} left out "
                           "(it copies the video and the audio); a re-encoding cut "
                           "keeps them",
                           others, others == 1 ? "" : "s");
}

// The three pieces: the edges encoded (into `dir`), the copied GOPs between; the audio, title
// and chapters from the input within the cut. Ctrl-C in an edge: the pieces before it.
JoinRequest pieces(const TranscodeOptions& o, const CutSource& src, const SmartCutPlan& p,
                   const EdgeFolder& dir, const RunHooks& hooks, TranscodeReport& r) {
  const auto [head_id, tail_id] = edge_ids(src.config, o.input);
  const double zero = src.cut.start.value_or(src.origin_s);  // the output's clock's zero
  JoinRequest join;
  std::vector<AvcConfig> edges;
  if (p.head) {  // from the cut's start as asked (its clock's zero) to the first copied GOP
    TranscodeOptions e = edge_options(o, src, dir.file("head.mp4"), head_id);
    e.start_s = o.start_s;
    e.start_frame = o.start_frame;
    e.end_s = src.seconds(*p.copy_from) - src.origin_s;
    if (auto head = encode_edge(e, hooks, r)) {
      edges.push_back(*head);
      join.parts.push_back({.path = e.output, .ends_before_next = true});
    }
  }
  if (!r.interrupted) {
    join.stream_from = join.parts.size();
    join.parts.push_back(
        {.path = o.input, .shift_s = -zero, .from_pts = p.copy_from, .until_pts = p.copy_until});
  }
  if (p.tail && !r.interrupted) {  // from the last copied GOP's end to the cut's
    TranscodeOptions e = edge_options(o, src, dir.file("tail.mp4"), tail_id);
    e.start_s = src.seconds(*p.copy_until) - src.origin_s;
    e.end_s = *src.cut.end - src.origin_s;  // the user's end (a tail has one)
    if (auto tail = encode_edge(e, hooks, r)) {
      edges.push_back(*tail);
      join.parts.push_back({.path = e.output, .shift_s = src.seconds(*p.copy_until) - zero});
    }
  }
  if (!edges.empty()) join.headers = write_avc_config(merge_avc_configs(src.config, edges));
  if (o.audio != AudioMode::kNone) {
    join.audio_from = o.input;
    join.audio_start_s = zero;
    join.audio_end_s = src.cut.end.value_or(1e18);
  }
  join.every_audio_track = o.audio == AudioMode::kCopy;
  join.metadata = !r.interrupted;  // the input's title and chapters, those inside the cut
  join.chapters_from_s = zero;
  join.chapters_until_s = src.cut.end.value_or(1e300);
  join.cut_short = r.interrupted;  // stopped in an edge: the audio ends with the video
  join.interrupt = r.interrupted ? nullptr : hooks.interrupt;
  join.output = o.output;
  return join;
}

}  // namespace

TranscodeReport smart_cut(const TranscodeOptions& o, const RunHooks& hooks) {
  const auto t0 = std::chrono::steady_clock::now();
  RunFiles files;  // before any work: the input is never written, the output no input
  files.reads(o.input, "input");
  files.writes(o.output, "output");
  files.check();
  const CutSource src = read_source(o);
  const SmartCutPlan p = plan_smart_cut(src.packets, src.from, src.until);
  if (!p.copy_from) return reencode_all(o, src, hooks);
  TranscodeReport r = copy_report(o);
  const EdgeFolder dir;
  const JoinRequest join = pieces(o, src, p, dir, hooks, r);
  if (join.parts.empty())
    throw input_error(
        fmt::format("{}: interrupted before the first frame was encoded: nothing "
                    "written",
                    o.output));
  const JoinResult done = join_parts(join);
  count_join(r, done);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool middle =
      join.parts.size() > join.stream_from && join.parts[join.stream_from].path == o.input;
  r.notes.push_back(fmt::format(
      "smart cut: {} video packets copied from {:.3f} s{}, {} frames re-encoded at the edges "
      "(libx264, {} profile)",
      middle ? done.part_packets[join.stream_from] : 0, src.seconds(*p.copy_from) - src.origin_s,
      p.copy_until ? fmt::format(" to {:.3f} s", src.seconds(*p.copy_until) - src.origin_s)
                   : std::string(" to the end"),
      r.frames_encoded, src.profile));
  if (const std::string gone = left_out(o.input); !gone.empty()) r.notes.push_back(gone);
  if (done.chapters < 0) r.notes.emplace_back("chapters left out: the container holds none");
  return r;
}

}  // namespace vpipe
