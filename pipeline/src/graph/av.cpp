#include "vpipe/pipeline/graph/av.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
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
std::string g_ignored;              // the options a codec said it ignored (warnings)

// FFmpeg writes a message in pieces ("Supported codecs are: ", "pcm_s16le ", …,
// "\n"): the pieces are joined, each line led by the name of what wrote it.
extern "C" void capture_ffmpeg_log(void* ptr, int level, const char* format, va_list args) {
  // libx265's wrapper only warns of a key or value x265 refused ("Unknown option: %s."), and
  // libx264's of an x264-params pair ("Error parsing option"); both go on without it: kept
  // apart, so the option is refused rather than ignored.
  if (level <= AV_LOG_WARNING &&
      (std::strstr(format, "Unknown option") || std::strstr(format, "Invalid value for") ||
       std::strstr(format, "Error parsing option"))) {
    va_list copy;
    va_copy(copy, args);
    char text[256];
    std::vsnprintf(text, sizeof text, format, copy);
    va_end(copy);
    std::lock_guard lock(g_capture_m);
    if (g_captured && g_ignored.size() < 1024) g_ignored += text;
  }
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
  g_ignored.clear();
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

std::string FfmpegErrors::ignored() const {
  std::lock_guard lock(g_capture_m);
  std::string out = g_ignored;
  std::replace(out.begin(), out.end(), '\n', ' ');
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

int av_check(int ret, std::string_view what) {
  if (ret < 0) throw ffmpeg_error(ret, fmt::format("{}: {}", what, av_error_text(ret)));
  return ret;
}

int send_video_frame(AVCodecContext* enc, AVFrame* frame) {
  if (frame && (enc->flags & AV_CODEC_FLAG_QSCALE)) frame->quality = enc->global_quality;
  return avcodec_send_frame(enc, frame);
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
std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

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

int video_stream(AVFormatContext& in, const std::string& path) {
  const int best = av_find_best_stream(&in, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (best < 0) throw input_error(fmt::format("{}: no video stream", path));
  if (!(in.streams[best]->disposition & AV_DISPOSITION_ATTACHED_PIC)) return best;
  throw input_error(
      fmt::format("{}: no video stream (stream #{} is a cover picture, one still beside the audio)",
                  path, best));
}

}  // namespace vpipe
