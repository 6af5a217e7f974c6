#include "vpipe/pipeline/graph/av.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

namespace vpipe {

std::pair<const std::uint8_t*, std::size_t> stream_side_data(const AVStream* s,
                                                             AVPacketSideDataType type) {
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 31, 102)
  const AVPacketSideData* sd =
      av_packet_side_data_get(s->codecpar->coded_side_data, s->codecpar->nb_coded_side_data, type);
  return sd ? std::pair<const std::uint8_t*, std::size_t>{sd->data, sd->size}
            : std::pair<const std::uint8_t*, std::size_t>{nullptr, 0};
#else
  std::size_t size = 0;
  const std::uint8_t* data = av_stream_get_side_data(s, type, &size);
  return {data, data ? size : 0};
#endif
}

std::uint8_t* new_stream_side_data(AVStream* s, AVPacketSideDataType type, std::size_t size) {
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(60, 31, 102)
  AVPacketSideData* sd = av_packet_side_data_new(&s->codecpar->coded_side_data,
                                                 &s->codecpar->nb_coded_side_data, type, size, 0);
  return sd ? sd->data : nullptr;
#else
  return av_stream_new_side_data(s, type, size);
#endif
}

std::string av_error_text(int averror) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(averror, buf, sizeof buf);
  return buf;
}

namespace {
std::mutex g_capture_owner;  // one FfmpegErrors at a time
std::mutex g_capture_m;
std::string* g_captured = nullptr;  // under g_capture_m
std::string g_text;                 // what the live FfmpegErrors kept

// FFmpeg writes a message in pieces ("Supported codecs are: ", "pcm_s16le ", …,
// "\n"): the pieces are joined, each line led by the name of what wrote it.
extern "C" void capture_ffmpeg_log(void* ptr, int level, const char* format, va_list args) {
  if (level <= AV_LOG_ERROR) {
    va_list copy;
    va_copy(copy, args);
    char text[512];
    std::vsnprintf(text, sizeof text, format, copy);
    va_end(copy);
    const AVClass* cls = ptr ? *static_cast<AVClass**>(ptr) : nullptr;
    std::lock_guard lock(g_capture_m);
    if (g_captured && g_captured->size() < 2048) {
      if (cls && (g_captured->empty() || g_captured->back() == '\n'))
        *g_captured += std::string(cls->item_name(ptr)) + ": ";
      *g_captured += text;
    }
  }
  av_log_default_callback(ptr, level, format, args);
}
}  // namespace

FfmpegErrors::FfmpegErrors() {
  g_capture_owner.lock();
  std::lock_guard lock(g_capture_m);
  g_text.clear();
  g_captured = &g_text;
  av_log_set_callback(capture_ffmpeg_log);
}

FfmpegErrors::~FfmpegErrors() {
  av_log_set_callback(av_log_default_callback);
  {
    std::lock_guard lock(g_capture_m);
    g_captured = nullptr;
  }
  g_capture_owner.unlock();
}

std::string FfmpegErrors::why() const {
  std::lock_guard lock(g_capture_m);
  std::string out;  // one line: runs of spaces and line breaks made one space
  for (const char c : g_text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > 240) out = out.substr(0, 237) + "...";
  return out.empty() ? out : " (why: " + out + ")";
}

int av_check(int ret, std::string_view what) {
  if (ret < 0) throw ffmpeg_error(ret, fmt::format("{}: {}", what, av_error_text(ret)));
  return ret;
}

UniqueAVFrame make_av_frame() {
  UniqueAVFrame f(av_frame_alloc());
  if (!f) throw ffmpeg_error(AVERROR(ENOMEM), "av_frame_alloc: out of memory");
  return f;
}

UniqueAVPacket make_av_packet() {
  UniqueAVPacket p(av_packet_alloc());
  if (!p) throw ffmpeg_error(AVERROR(ENOMEM), "av_packet_alloc: out of memory");
  return p;
}

namespace {
// Whether a NAL unit's header byte names an IDR picture: H.264's type 5, HEVC's
// IDR_W_RADL (19) and IDR_N_LP (20).
bool idr_nal(AVCodecID codec, std::uint8_t header) {
  if (codec == AV_CODEC_ID_H264) return (header & 0x1f) == 5;
  const int type = (header >> 1) & 0x3f;
  return type == 19 || type == 20;
}

// The bytes of each NAL unit's length where the extradata is a record of the
// parameter sets (avcC, hvcC: MP4, MKV), else 0: Annex B start codes.
int nal_length_bytes(const AVCodecContext& d) {
  if (d.extradata_size < 7 || d.extradata[0] != 1) return 0;
  if (d.codec_id == AV_CODEC_ID_H264) return (d.extradata[4] & 3) + 1;
  return d.extradata_size >= 23 ? (d.extradata[21] & 3) + 1 : 0;  // hvcC: lengthSizeMinusOne
}
}  // namespace

bool idr_picture(const AVCodecContext& decoder, const AVPacket& pkt) {
  const AVCodecID codec = decoder.codec_id;
  if ((codec != AV_CODEC_ID_H264 && codec != AV_CODEC_ID_HEVC) || !pkt.data) return false;
  const std::uint8_t* p = pkt.data;
  const std::uint8_t* const end = p + pkt.size;
  if (const int length_bytes = nal_length_bytes(decoder)) {
    while (end - p > length_bytes) {
      std::size_t n = 0;
      for (int i = 0; i < length_bytes; ++i) n = (n << 8) | *p++;
      if (n == 0 || n > static_cast<std::size_t>(end - p)) return false;
      if (idr_nal(codec, *p)) return true;
      p += n;
    }
    return false;
  }
  for (; end - p > 3; ++p)  // Annex B: 00 00 01, then the NAL unit's header
    if (p[0] == 0 && p[1] == 0 && p[2] == 1 && idr_nal(codec, p[3])) return true;
  return false;
}

namespace {
std::string_view scheme_of(std::string_view url) {
  const auto colon = url.find("://");
  return colon == std::string_view::npos ? std::string_view() : url.substr(0, colon);
}
std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool is_live_input(std::string_view url) {
  const auto s = scheme_of(url);
  return s == "udp" || s == "rtp" || s == "srt" || s == "rtsp" || s == "rtsps" || s == "rtmp" ||
         s == "tcp";
}

bool can_reconnect(std::string_view url) {
  const auto s = scheme_of(url);
  return s == "srt" || s == "rtsp" || s == "rtsps" || s == "rtmp" || s == "tcp" || s == "http" ||
         s == "https";
}

bool is_pipe(std::string_view url) {
  return url == "-" || url.rfind("pipe:", 0) == 0 || url.rfind("fd:", 0) == 0;
}

bool is_stdout(std::string_view url) {
  return url == "-" || url == "pipe:" || url == "pipe:1" || url == "fd:1";
}

std::string network_output_format(std::string_view url) {
  const auto s = scheme_of(url);
  // A pipe ("-", pipe:, fd:) has no name to tell a container by: MPEG-TS, which streams.
  if (is_pipe(url)) return "mpegts";
  if (s == "udp" || s == "srt" || s == "tcp") return "mpegts";
  if (s == "rtp") return "rtp_mpegts";
  return {};
}

const AVOutputFormat* output_container(const std::string& output) {
  const std::string net = network_output_format(output);
  return av_guess_format(net.empty() ? nullptr : net.c_str(), output.c_str(), nullptr);
}

std::optional<bool> container_holds(const AVOutputFormat* container, AVCodecID codec) {
  if (!container) return std::nullopt;
  // QuickTime's muxer says yes to codecs its header then refuses ("flac only supported in MP4":
  // FLAC audio from an MKV into .mov stopped the run before a frame): asked of FFmpeg 5.1's tool.
  static const std::set<AVCodecID> kMovRefuses = {AV_CODEC_ID_FLAC,   AV_CODEC_ID_OPUS,
                                                  AV_CODEC_ID_TRUEHD, AV_CODEC_ID_VP9,
                                                  AV_CODEC_ID_VP8,    AV_CODEC_ID_AV1};
  if (std::string_view(container->name) == "mov" && kMovRefuses.count(codec)) return false;
  // MXF's essence containers hold 16- or 24-bit PCM audio alone (libavformat's mxfenc; its query
  // said yes to MP3 and AAC, then its header refused them).
  if (std::string_view(container->name).substr(0, 3) == "mxf" &&
      avcodec_get_type(codec) == AVMEDIA_TYPE_AUDIO)
    return codec == AV_CODEC_ID_PCM_S16LE || codec == AV_CODEC_ID_PCM_S24LE;
  const int answer = avformat_query_codec(container, codec, FF_COMPLIANCE_NORMAL);
  if (answer >= 0) return answer == 1;
  // What these muxers write (libavformat's mpegtsenc.c, mpegenc.c, oggenc.c,
  // gif.c, webpenc.c, yuv4mpegenc.c): they refuse, or mangle, everything else.
  static const std::map<std::string_view, std::set<AVCodecID>> kHolds = {
      {"mpegts",
       {AV_CODEC_ID_MPEG1VIDEO,   AV_CODEC_ID_MPEG2VIDEO,  AV_CODEC_ID_MPEG4, AV_CODEC_ID_H264,
        AV_CODEC_ID_HEVC,         AV_CODEC_ID_VVC,         AV_CODEC_ID_CAVS,  AV_CODEC_ID_DIRAC,
        AV_CODEC_ID_VC1,          AV_CODEC_ID_AV1,         AV_CODEC_ID_MP2,   AV_CODEC_ID_MP3,
        AV_CODEC_ID_AAC,          AV_CODEC_ID_AAC_LATM,    AV_CODEC_ID_AC3,   AV_CODEC_ID_EAC3,
        AV_CODEC_ID_DTS,          AV_CODEC_ID_TRUEHD,      AV_CODEC_ID_OPUS,  AV_CODEC_ID_S302M,
        AV_CODEC_ID_DVB_SUBTITLE, AV_CODEC_ID_DVB_TELETEXT}},
      {"mpeg",
       {AV_CODEC_ID_MPEG1VIDEO, AV_CODEC_ID_MPEG2VIDEO, AV_CODEC_ID_MP2, AV_CODEC_ID_MP3,
        AV_CODEC_ID_AC3, AV_CODEC_ID_DTS, AV_CODEC_ID_PCM_DVD}},
      {"vob",
       {AV_CODEC_ID_MPEG1VIDEO, AV_CODEC_ID_MPEG2VIDEO, AV_CODEC_ID_H264, AV_CODEC_ID_MP2,
        AV_CODEC_ID_MP3, AV_CODEC_ID_AC3, AV_CODEC_ID_DTS, AV_CODEC_ID_PCM_DVD,
        AV_CODEC_ID_DVD_SUBTITLE}},
      {"ogg",
       {AV_CODEC_ID_THEORA, AV_CODEC_ID_VP8, AV_CODEC_ID_VORBIS, AV_CODEC_ID_OPUS, AV_CODEC_ID_FLAC,
        AV_CODEC_ID_SPEEX}},
      {"ogv",
       {AV_CODEC_ID_THEORA, AV_CODEC_ID_VP8, AV_CODEC_ID_VORBIS, AV_CODEC_ID_OPUS, AV_CODEC_ID_FLAC,
        AV_CODEC_ID_SPEEX}},
      {"gif", {AV_CODEC_ID_GIF}},
      {"webp", {AV_CODEC_ID_WEBP}},
      {"yuv4mpegpipe", {AV_CODEC_ID_WRAPPED_AVFRAME, AV_CODEC_ID_RAWVIDEO}},
  };
  std::string_view name = container->name;
  if (name.substr(0, 4) == "rtp_") name = name.substr(4);  // rtp_mpegts: MPEG-TS
  const auto it = kHolds.find(name);
  if (it != kHolds.end()) return it->second.count(codec) > 0;
  // A raw elementary stream (.h264, .hevc, .m2v, .yuv: no container, no timestamps) is its own
  // codec's bitstream alone; H.264 written into a .hevc is a file no reader takes for HEVC.
  if ((container->flags & AVFMT_NOTIMESTAMPS) && container->video_codec != AV_CODEC_ID_NONE &&
      avcodec_get_type(codec) == AVMEDIA_TYPE_VIDEO)
    return codec == container->video_codec;
  // A muxer with no audio codec of its own holds no audio: raw streams (.h264,
  // .hevc, .m2v, .ivf). They said "exactly one stream", at the header.
  if (avcodec_get_type(codec) == AVMEDIA_TYPE_AUDIO && container->audio_codec == AV_CODEC_ID_NONE)
    return false;
  return std::nullopt;
}

void InputWatch::arm() { deadline_ns_ = steady_ns() + static_cast<std::int64_t>(timeout_s_ * 1e9); }
void InputWatch::disarm() { deadline_ns_ = 0; }

bool InputWatch::stalled() const { return tripped_.load(); }
void InputWatch::reset() { tripped_ = false; }

int OutputWatch::poll(void* opaque) {
  auto* w = static_cast<OutputWatch*>(opaque);
  const std::int64_t now = steady_ns(), pos = w->pb_ ? w->pb_->pos : -1;
  if (pos != w->pos_ || !w->pb_) {  // a write went through: the next one starts waiting now
    w->pos_ = pos;
    w->since_ns_ = now;
  }
  if (!w->interrupt_ || !w->interrupt_->load()) return 0;
  if (now - w->since_ns_ > w->grace_ns_) w->abandoned_ = true;
  return w->abandoned_ ? 1 : 0;
}

namespace {
// The muxer's own answer for one stream of `par`: its init's return.
int try_muxer(const AVOutputFormat* container, const AVCodecParameters* par) {
  AVFormatContext* raw = nullptr;
  if (avformat_alloc_output_context2(&raw, container, nullptr, nullptr) < 0 || !raw) return 0;
  const std::unique_ptr<AVFormatContext, void (*)(AVFormatContext*)> ctx(
      raw, [](AVFormatContext* c) {
        if (c->pb) {
          std::uint8_t* bytes = nullptr;
          (void)avio_close_dyn_buf(c->pb, &bytes);
          av_free(bytes);
        }
        avformat_free_context(c);
      });
  AVStream* s = avformat_new_stream(raw, nullptr);
  if (!s || avcodec_parameters_copy(s->codecpar, par) < 0 || avio_open_dyn_buf(&raw->pb) < 0)
    return 0;
  s->codecpar->codec_tag = 0;
  s->time_base = {1, par->sample_rate > 0 ? par->sample_rate : 90000};
  return avformat_init_output(raw, nullptr);
}
}  // namespace

const AVOutputFormat* segment_container(const AVOutputFormat* container, AVCodecID codec) {
  const std::string_view name = container ? container->name : "";
  if (name == "hls") return av_guess_format("mpegts", nullptr, nullptr);  // hls_segment_type
  if (name != "dash") return container;
  // libavformat's dashenc, dash_segment_type auto: WebM for these, MP4 for the rest.
  const bool webm = codec == AV_CODEC_ID_OPUS || codec == AV_CODEC_ID_VORBIS ||
                    codec == AV_CODEC_ID_VP8 || codec == AV_CODEC_ID_VP9;
  return av_guess_format(webm ? "webm" : "mp4", nullptr, nullptr);
}

int container_sample_rate(const AVOutputFormat* container, AVCodecID codec, int rate) {
  const std::string_view name = container ? container->name : "";
  if (name.substr(0, 3) == "mxf") return rate == 48000 ? 0 : 48000;  // "only 48khz is implemented"
  // FLV's audio header has 44.1, 22.05, 11.025 and 5.5 kHz; its MP3 and AAC say 44.1 for any.
  if (name == "flv" && codec != AV_CODEC_ID_MP3 && codec != AV_CODEC_ID_AAC &&
      codec != AV_CODEC_ID_SPEEX && rate != 44100 && rate != 22050 && rate != 11025 && rate != 5512)
    return 44100;
  return 0;
}

std::string cannot_hold(const AVOutputFormat* container, const AVCodecParameters* par) {
  const AVOutputFormat* segments = segment_container(container, par->codec_id);
  if (!segments) return {};
  const std::string who = segments == container
                              ? std::string(container->name)
                              : fmt::format("{}'s {} segments", container->name, segments->name);
  if (container_holds(segments, par->codec_id) == false) return who + " cannot hold it";
  if (par->codec_type == AVMEDIA_TYPE_AUDIO)
    if (const int rate = container_sample_rate(segments, par->codec_id, par->sample_rate))
      return fmt::format("{} holds it at {} Hz, not {}", who, rate, par->sample_rate);
  if (segments->flags & AVFMT_NOFILE) return {};
  if (try_muxer(segments, par) == AVERROR_EXPERIMENTAL)
    return fmt::format("{} {} it only as an experimental feature", who,
                       segments == container ? "holds" : "hold");
  return {};
}

void MuxerFiles::attach(AVFormatContext* oc) {
  open_ = oc->io_open;  // libavformat's defaults, set by avformat_alloc_context
  close_ = oc->io_close2;
  oc->opaque = this;
  oc->io_open = &MuxerFiles::open;
  oc->io_close2 = &MuxerFiles::close;
}

int MuxerFiles::open(AVFormatContext* s, AVIOContext** pb, const char* url, int flags,
                     AVDictionary** options) {
  auto* self = static_cast<MuxerFiles*>(s->opaque);
  const int ret = self->open_(s, pb, url, flags, options);
  if (ret >= 0 && *pb) {
    std::lock_guard lock(self->mutex_);
    self->urls_[*pb] = url ? url : "";
  }
  return ret;
}

int MuxerFiles::close(AVFormatContext* s, AVIOContext* pb) {
  auto* self = static_cast<MuxerFiles*>(s->opaque);
  std::string url;
  {
    std::lock_guard lock(self->mutex_);
    if (auto it = self->urls_.find(pb); it != self->urls_.end()) {
      url = std::move(it->second);
      self->urls_.erase(it);
    }
  }
  const int ret = self->close_(s, pb);  // flushes; returns the file's first write error
  if (ret < 0 && ret != AVERROR_EXIT) {
    std::lock_guard lock(self->mutex_);
    if (self->error_ == 0) {
      self->error_ = ret;
      self->url_ = std::move(url);
    }
  }
  return ret;
}

void MuxerFiles::check() const {
  std::lock_guard lock(mutex_);
  if (error_ < 0) av_check(error_, fmt::format("writing '{}'", url_));
}

int InputWatch::poll(void* opaque) {
  auto* w = static_cast<InputWatch*>(opaque);
  if (w->interrupt_ && w->interrupt_->load()) {
    w->interrupted_ = true;
    return 1;
  }
  const auto deadline = w->deadline_ns_.load();
  // Sticky: FFmpeg's UDP reader polls from its own thread, and the read that
  // fails may be a later one than the read that ran out of time.
  if (deadline != 0 && steady_ns() > deadline) {
    w->tripped_ = true;
    return 1;
  }
  if (w->tripped_.load()) return 1;
  return 0;
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

std::string ffmpeg_url(const std::string& name) {
  if (name == "-") return "pipe:";  // as the ffmpeg tool: stdin read, stdout written
  const auto colon = name.find(':');
  if (colon == std::string::npos || colon == 0 || name.find('/') < colon) return name;
  // scheme://: a URL, though its scheme may be a demuxer's, not a protocol (rtsp://)
  if (name.compare(colon, 3, "://") == 0) return name;
  const std::string proto = name.substr(0, std::min(colon, name.find(',')));  // "subfile,,…:"
  for (const int output : {0, 1}) {
    void* it = nullptr;
    while (const char* known = avio_enum_protocols(&it, output))
      if (proto == known) return name;
  }
  return "file:" + name;
}

int video_stream(AVFormatContext& in, const std::string& path) {
  const int best = av_find_best_stream(&in, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (best < 0) throw input_error(fmt::format("{}: no video stream", path));
  if (!(in.streams[best]->disposition & AV_DISPOSITION_ATTACHED_PIC)) return best;
  throw input_error(
      fmt::format("{}: no video stream (stream #{} is a cover picture, one still beside the audio)",
                  path, best));
}

UniqueDemuxContext open_input(const std::string& name, const InputOpenOptions& options) {
  const std::string path = ffmpeg_url(name);
  AVFormatContext* raw = avformat_alloc_context();
  if (!raw) throw ffmpeg_error(AVERROR(ENOMEM), "avformat_alloc_context: out of memory");
  if (options.watch) raw->interrupt_callback = options.watch->callback();
  AVDictionary* opts = nullptr;
  if (options.low_latency) {  // (not fflags=nobuffer: it loses the packets read while probing)
    av_dict_set(&opts, "probesize", "500000", 0);        // bytes: a few frames of a live feed
    av_dict_set(&opts, "analyzeduration", "500000", 0);  // µs
    if (scheme_of(path) == "udp") av_dict_set(&opts, "overrun_nonfatal", "1", 0);
  }
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
