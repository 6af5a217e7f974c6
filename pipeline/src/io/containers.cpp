#include "vpipe/pipeline/io/containers.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <vector>

#include "vpipe/pipeline/io/protocols.hpp"

namespace vpipe {

const AVOutputFormat* output_container(const std::string& output) {
  const std::string net = network_output_format(output);
  return av_guess_format(net.empty() ? nullptr : net.c_str(), output.c_str(), nullptr);
}

namespace {

using Codecs = std::set<AVCodecID>;

// One container's facts where FFmpeg 5.1's own answer (avformat_query_codec) is missing or
// wrong: asked of its muxers' headers by tests/unit/containers_test.cpp. Adding a container
// is one row.
struct ContainerRow {
  std::string_view muxer;       // its name in FFmpeg ("rtp_mpegts" is read as "mpegts")
  Codecs holds;                 // everything it takes, where its muxer has no query; empty: ask it
  Codecs refuses;               // what its query says yes to and its header refuses
  std::optional<Codecs> audio;  // the only audio it takes
};

const Codecs kProgramStream = {AV_CODEC_ID_MPEG1VIDEO, AV_CODEC_ID_MPEG2VIDEO, AV_CODEC_ID_MP2,
                               AV_CODEC_ID_MP3,        AV_CODEC_ID_AC3,        AV_CODEC_ID_DTS,
                               AV_CODEC_ID_PCM_DVD};
const Codecs kDvdStream = {
    AV_CODEC_ID_MPEG1VIDEO, AV_CODEC_ID_MPEG2VIDEO, AV_CODEC_ID_H264,
    AV_CODEC_ID_MP2,        AV_CODEC_ID_MP3,        AV_CODEC_ID_AC3,
    AV_CODEC_ID_DTS,        AV_CODEC_ID_PCM_DVD,    AV_CODEC_ID_DVD_SUBTITLE};
const Codecs kOgg = {AV_CODEC_ID_THEORA, AV_CODEC_ID_VP8,  AV_CODEC_ID_VORBIS,
                     AV_CODEC_ID_OPUS,   AV_CODEC_ID_FLAC, AV_CODEC_ID_SPEEX};

const std::vector<ContainerRow>& container_rows() {
  static const std::vector<ContainerRow> rows = {
      // What these muxers write (mpegtsenc.c, mpegenc.c in its MPEG-PS, Video CD, Super VCD
      // and DVD forms, oggenc.c, gif.c, webpenc.c, yuv4mpegenc.c, flacenc.c): they refuse, or
      // mangle, everything else. FFmpeg 5.1 writes AV1 into MPEG-TS as bin_data (no video),
      // and names .vob svcd, whose header refused AAC.
      {"mpegts", {AV_CODEC_ID_MPEG1VIDEO, AV_CODEC_ID_MPEG2VIDEO,   AV_CODEC_ID_MPEG4,
                  AV_CODEC_ID_H264,       AV_CODEC_ID_HEVC,         AV_CODEC_ID_VVC,
                  AV_CODEC_ID_CAVS,       AV_CODEC_ID_DIRAC,        AV_CODEC_ID_VC1,
                  AV_CODEC_ID_MP2,        AV_CODEC_ID_MP3,          AV_CODEC_ID_AAC,
                  AV_CODEC_ID_AAC_LATM,   AV_CODEC_ID_AC3,          AV_CODEC_ID_EAC3,
                  AV_CODEC_ID_DTS,        AV_CODEC_ID_TRUEHD,       AV_CODEC_ID_OPUS,
                  AV_CODEC_ID_S302M,      AV_CODEC_ID_DVB_SUBTITLE, AV_CODEC_ID_DVB_TELETEXT}},
      {"mpeg", kProgramStream},
      {"vcd", kProgramStream},
      {"vob", kDvdStream},
      {"svcd", kDvdStream},
      {"dvd", kDvdStream},
      {"ogg", kOgg},
      {"ogv", kOgg},
      {"gif", {AV_CODEC_ID_GIF}},
      {"webp", {AV_CODEC_ID_WEBP}},
      {"yuv4mpegpipe", {AV_CODEC_ID_WRAPPED_AVFRAME}},  // libavformat 59: raw frames, wrapped
      {"flac", {AV_CODEC_ID_FLAC}},  // and a cover picture, which is no video stream
      // QuickTime's muxer says yes to codecs its header then refuses ("flac only supported in
      // MP4": FLAC audio from an MKV into .mov stopped the run before a frame).
      {"mov",
       {},
       {AV_CODEC_ID_FLAC, AV_CODEC_ID_OPUS, AV_CODEC_ID_TRUEHD, AV_CODEC_ID_VP9, AV_CODEC_ID_VP8,
        AV_CODEC_ID_AV1}},
      {"mp4", {}, {AV_CODEC_ID_FLAC, AV_CODEC_ID_TRUEHD}},     // "experimental" at the header
      {"matroska", {}, {AV_CODEC_ID_RV10, AV_CODEC_ID_RV20}},  // "not yet implemented"
      // FLV's video is Sorenson's H.263 (flv1), not H.263 or MPEG-4; its Speex 16 kHz mono.
      {"flv", {}, {AV_CODEC_ID_H263, AV_CODEC_ID_MPEG4, AV_CODEC_ID_SPEEX}},
      // AVI's header takes FLAC and Opus (a WAV tag), whose packets no reader decodes from it.
      {"avi", {}, {AV_CODEC_ID_FLAC, AV_CODEC_ID_OPUS}},
      // MXF's essence containers hold 16- or 24-bit PCM audio alone (mxfenc; its query said
      // yes to MP3 and AAC, then its header refused them).
      {"mxf", {}, {}, Codecs{AV_CODEC_ID_PCM_S16LE, AV_CODEC_ID_PCM_S24LE}},
      {"mxf_d10", {}, {}, Codecs{AV_CODEC_ID_PCM_S16LE, AV_CODEC_ID_PCM_S24LE}},
      {"mxf_opatom", {}, {}, Codecs{AV_CODEC_ID_PCM_S16LE, AV_CODEC_ID_PCM_S24LE}},
  };
  return rows;
}

const ContainerRow* row_of(const AVOutputFormat* container) {
  std::string_view name = container->name;
  if (name.substr(0, 4) == "rtp_") name = name.substr(4);  // rtp_mpegts: MPEG-TS
  for (const auto& row : container_rows())
    if (row.muxer == name) return &row;
  return nullptr;
}

}  // namespace

std::optional<bool> container_holds(const AVOutputFormat* container, AVCodecID codec) {
  if (!container) return std::nullopt;
  const bool audio = avcodec_get_type(codec) == AVMEDIA_TYPE_AUDIO;
  if (const ContainerRow* row = row_of(container)) {
    if (!row->holds.empty()) return row->holds.count(codec) > 0;
    if (row->refuses.count(codec)) return false;
    if (audio && row->audio) return row->audio->count(codec) > 0;
  }
  const int answer = avformat_query_codec(container, codec, FF_COMPLIANCE_NORMAL);
  // Matroska's query lists its own codec ids; any other video with a RIFF tag it writes as
  // V_MS/VFW/FOURCC, and audio with a WAV tag as A_MS/ACM, as FFmpeg's tool does (huffyuv).
  if (answer == 0 && std::string_view(container->name) == "matroska") {
    const AVCodecTag* const video[] = {avformat_get_riff_video_tags(), nullptr};
    const AVCodecTag* const audio_tags[] = {avformat_get_riff_audio_tags(), nullptr};
    return av_codec_get_tag(audio ? audio_tags : video, codec) != 0;
  }
  if (answer >= 0) return answer == 1;
  // A raw elementary stream (.h264, .hevc, .m2v, .yuv: no container, no timestamps) is its own
  // codec's bitstream alone; H.264 written into a .hevc is a file no reader takes for HEVC.
  if ((container->flags & AVFMT_NOTIMESTAMPS) && container->video_codec != AV_CODEC_ID_NONE &&
      avcodec_get_type(codec) == AVMEDIA_TYPE_VIDEO)
    return codec == container->video_codec;
  // A muxer with no audio codec of its own holds no audio: raw streams (.h264,
  // .hevc, .m2v, .ivf). They said "exactly one stream", at the header.
  if (audio && container->audio_codec == AV_CODEC_ID_NONE) return false;
  return std::nullopt;
}

namespace {
// The muxer's own answer for one stream of `par`: its header written into memory (0, or what its
// init or header returned). A trial: its messages are not the user's news.
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
  const QuietFfmpegLog quiet;
  int ret = avformat_init_output(raw, nullptr);
  if (ret >= 0) ret = avformat_write_header(raw, nullptr);
  return ret;
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
  const int trial = try_muxer(segments, par);
  if (trial == AVERROR_EXPERIMENTAL)
    return fmt::format("{} {} it only as an experimental feature", who,
                       segments == container ? "holds" : "hold");
  if (trial < 0)
    return fmt::format("{}'s muxer refuses it at its header ({})", who, av_error_text(trial));
  return {};
}

}  // namespace vpipe
