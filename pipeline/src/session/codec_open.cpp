#include "vpipe/pipeline/session/codec_open.hpp"

#include <fmt/format.h>

#include <string_view>

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/pipeline/graph/host_frames.hpp"
#include "vpipe/pipeline/io/nvdec.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/session/encoder_controls.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

namespace vpipe {

int decoder_threads(const TranscodeOptions& o, bool nvdec) {
  if (o.decode_threads > 0 || !nvdec) return o.decode_threads;
  return is_live_input(o.input) ? 1 : kNvdecFrameThreads;
}

NvdecApi nvdec_api_for(const TranscodeOptions& o, AVCodecID codec) {
  if (o.nvdec_api != NvdecApi::kAuto) return o.nvdec_api;
  const bool many = o.streams > 1 && o.decode_sessions == 1;
  return many && cuvid_decoder(codec) ? NvdecApi::kCuvid : NvdecApi::kHwaccel;
}

UniqueAVCodecContext open_decoder(AVStream* stream, const TranscodeOptions& o, NvdecContext* nvdec,
                                  int nvdec_frames_held, HostFramePool* host_pool) {
  const bool cuvid = nvdec && nvdec_api_for(o, stream->codecpar->codec_id) == NvdecApi::kCuvid;
  const AVCodec* codec = cuvid ? cuvid_decoder(stream->codecpar->codec_id)
                               : avcodec_find_decoder(stream->codecpar->codec_id);
  if (!codec && cuvid)
    throw input_error(
        fmt::format("{}: FFmpeg has no cuvid decoder for '{}' (use nvdec_api hwaccel)", o.input,
                    avcodec_get_name(stream->codecpar->codec_id)));
  if (!codec)
    throw input_error(fmt::format("{}: no decoder for video codec '{}'", o.input,
                                  avcodec_get_name(stream->codecpar->codec_id)));
  UniqueAVCodecContext dec(avcodec_alloc_context3(codec));
  av_check(avcodec_parameters_to_context(dec.get(), stream->codecpar), "decoder parameters");
  dec->pkt_timebase = stream->time_base;
  dec->thread_count = decoder_threads(o, nvdec != nullptr);
  // Frame threads hold a frame per thread before the first comes out: a live
  // input decodes with slice threads only, and asks for low delay.
  const bool live = is_live_input(o.input);
  dec->thread_type = live ? FF_THREAD_SLICE : FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (live) dec->flags |= AV_CODEC_FLAG_LOW_DELAY;
  if (cuvid) {
    dec->thread_count = 1;  // NVIDIA's parser in the driver: FFmpeg's threads take no part
    nvdec->attach_cuvid(dec.get());
  } else if (nvdec) {
    nvdec->attach(dec.get(), nvdec_frames_held);
  }
  if (host_pool) host_pool->attach(dec.get());
  if (const int ret = avcodec_open2(dec.get(), codec, nullptr); ret < 0)
    throw input_error(fmt::format("{}: cannot open the {} decoder: {}", o.input, codec->name,
                                  av_error_text(ret)));
  return dec;
}

namespace {

// The user's rate caps and profile (the encoder's own option where it has one, libx264's
// strings, else the codec context's), and each encoder_option, put in `opts` after vpipe's
// settings so that the user's win. Quality, preset, level and bit rate: apply_controls.
void set_user_encoder_options(AVCodecContext* enc, const AVCodec* codec, const TranscodeOptions& o,
                              AVDictionary*& opts) {
  if (o.maxrate) enc->rc_max_rate = *o.maxrate;
  if (o.bufsize) enc->rc_buffer_size = static_cast<int>(*o.bufsize);
  if (!o.profile.empty()) {
    // The encoder's own option first (set directly: open would try the context's first).
    const bool own = enc->priv_data && av_opt_find(enc->priv_data, "profile", nullptr, 0, 0);
    if (av_opt_set(own ? enc->priv_data : static_cast<void*>(enc), "profile", o.profile.c_str(),
                   0) < 0)
      throw usage_error(
          fmt::format("{}: encoder {} takes no profile '{}'", o.output, codec->name, o.profile));
  }
  for (const auto& kv : o.encoder_options) {
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq);
    const std::string value = kv.substr(eq + 1);
    // x264's and x265's own lists keep what vpipe set (the stream's rate, the log level,
    // HDR10 metadata, the level) before the user's, which the library reads last: it wins.
    if (key == "x264-params" || key == "x265-params")
      add_library_param(opts, key.c_str(), value);
    else
      av_dict_set(&opts, key.c_str(), value.c_str(), 0);
  }
}

// Encoders that read their time base as the frame rate, or whose packets count frames in it:
// MPEG-1/2, H.263 and DV (the input's 1/15360 was "15360 fps", refused), MPEG-4 part 2 past
// 16 bits, and Theora (its granule counts frames of 1/time base: with FLV's 1/1000, 25 of 30
// frames vanished in Ogg and Matroska). They take one over the frame rate.
bool time_base_counts_frames(AVCodecID id, AVRational time_base) {
  switch (id) {
    case AV_CODEC_ID_MPEG1VIDEO:
    case AV_CODEC_ID_MPEG2VIDEO:
    case AV_CODEC_ID_H263:
    case AV_CODEC_ID_DVVIDEO:
    case AV_CODEC_ID_THEORA:
      return true;
    case AV_CODEC_ID_MPEG4:
      return time_base.den > 65535;
    default:
      return false;
  }
}

}  // namespace

bool closes_without_frames(const AVCodec* codec) {
  return std::string_view(codec->name) != "libsvtav1";
}

namespace {

// "profile high, crf 18": the options of `o` an encoder is given, for a refusal.
std::string options_asked(const TranscodeOptions& o) {
  std::string asked;
  const auto add = [&](std::string_view key, const std::string& value) {
    if (!value.empty()) asked += fmt::format("{}{} {}", asked.empty() ? "" : ", ", key, value);
  };
  const auto number = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string(); };
  add("profile", o.profile);
  add("level", o.level);
  add("bitrate", number(o.bitrate));
  add("maxrate", number(o.maxrate));
  add("bufsize", number(o.bufsize));
  add("preset", o.preset);
  add("crf", number(o.crf));
  add("qscale", number(o.qscale));
  for (const auto& kv : o.encoder_options) add("encoder_option", kv);
  return asked;
}

// `o` without any encoder option the user gave.
TranscodeOptions without_encoder_options(TranscodeOptions o) {
  const TranscodeOptions defaults;
  o.profile = defaults.profile;
  o.level = defaults.level;
  o.bitrate = defaults.bitrate;
  o.maxrate = defaults.maxrate;
  o.bufsize = defaults.bufsize;
  o.encoder_options = defaults.encoder_options;
  o.preset = defaults.preset;
  o.crf = defaults.crf;
  o.qscale = defaults.qscale;
  return o;
}

}  // namespace

void check_encoder_options(const TranscodeOptions& o) {
  const std::string asked = options_asked(o);
  // auto may become NVENC, whose options are not libx264's: the real open says.
  if (o.output == "null" || asked.empty() || (o.encoder == "auto" && !o.encoder_options.empty()))
    return;
  const AVCodec* codec =
      avcodec_find_encoder_by_name(o.encoder == "auto" ? "libx264" : o.encoder.c_str());
  if (!codec || codec->type != AVMEDIA_TYPE_VIDEO) return;  // choose_encoder names it later
  if (o.encoder != "auto") check_controls(codec, o);
  if (!closes_without_frames(codec)) return;  // the real open checks them
  const FrameFormat format{encoder_format(codec, AV_PIX_FMT_YUV420P), 1280, 720};
  const QuietFfmpegLog quiet;  // a trial: its banner and refusals are not the user's news
  const auto open = [&](TranscodeOptions with) {
    with.encode_threads = 1;
    (void)open_video_encoder(codec, format, {1, 25}, {25, 1}, false, with, nullptr);
  };
  try {  // the encoder alone first: if even that fails, the input decides
    open(without_encoder_options(o));
  } catch (const std::exception&) {
    return;
  }
  try {
    open(o);
  } catch (const usage_error&) {
    throw;
  } catch (const std::exception& e) {
    // The trial's own size is not the input's: the refusal is of the options.
    std::string why = e.what();
    if (const auto at = why.find(" for " + to_string(format)); at != std::string::npos)
      why.erase(at, 5 + to_string(format).size());
    throw usage_error(fmt::format("{} (it opens without them; asked: {})", why, asked));
  }
}

bool is_interlaced(AVFieldOrder order) {
  return order != AV_FIELD_UNKNOWN && order != AV_FIELD_PROGRESSIVE;
}

bool codes_fields(const AVCodec* codec, const FrameFormat& format) {
  const std::string_view name = codec->name;
  return (name == "libx264" || name == "mpeg2video") &&
         splits_into_fields(format.pix_fmt, format.height);
}

UniqueAVCodecContext open_video_encoder(const AVCodec* codec, const FrameFormat& format,
                                        AVRational time_base, AVRational frame_rate,
                                        bool global_header, const TranscodeOptions& o,
                                        const AVCodecContext* props, AVRational sample_aspect,
                                        const Hdr10* hdr10) {
  UniqueAVCodecContext enc(avcodec_alloc_context3(codec));
  enc->width = format.width;
  enc->height = format.height;
  enc->pix_fmt = format.pix_fmt;
  enc->time_base =
      time_base_counts_frames(codec->id, time_base) && frame_rate.num > 0 && frame_rate.den > 0
          ? av_inv_q(frame_rate)
          : time_base;
  enc->framerate = frame_rate;
  enc->sample_aspect_ratio = sample_aspect;
  if (props) {
    enc->color_range = props->color_range;
    enc->colorspace = props->colorspace;
    enc->chroma_sample_location = props->chroma_sample_location;
    enc->color_primaries = props->color_primaries;
    enc->color_trc = props->color_trc;
    enc->field_order = props->field_order;
    if (is_interlaced(props->field_order) && codes_fields(codec, format))
      enc->flags |= AV_CODEC_FLAG_INTERLACED_DCT | AV_CODEC_FLAG_INTERLACED_ME;
  }
  enc->thread_count = o.encode_threads;
  if (o.gop > 0) enc->gop_size = o.gop;
  if (global_header) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  AVDictionary* enc_opts = nullptr;
  const std::string name = codec->name;
  if (name == "libx264") {
    // Live (a live input, a paced run, a network output): no lookahead, no
    // B-frames: a frame leaves the encoder as it enters.
    if (is_live_input(o.input) || o.realtime || !network_output_format(o.output).empty())
      av_dict_set(&enc_opts, "tune", "zerolatency", 0);
    // x264 writes its time base as the stream's timing (the SPS said 12,800 fps for a 25-fps
    // MP4 input, and a raw .h264 remuxed 50 frames into 0.04 ms) unless told the rate is
    // constant: then the frame rate. Each frame's timestamp still passes through as given.
    if (frame_rate.num > 0 && frame_rate.den > 0)
      add_library_param(enc_opts, "x264-params", "force-cfr=1");
  } else if (name == "libx265") {
    // x265 logs its banner at info level on its own: warnings only, unless -v.
    if (av_log_get_level() < AV_LOG_WARNING)
      add_library_param(enc_opts, "x265-params", "log-level=warning");
    if (const auto hdr = hdr10 ? x265_hdr10_params(*hdr10) : std::string(); !hdr.empty())
      add_library_param(enc_opts, "x265-params", hdr);  // 5.1's wrapper reads no side data
  } else if (codec->id == AV_CODEC_ID_THEORA && !o.bitrate) {
    // libtheora's rate control at FFmpeg's 200 kb/s dropped half of 720p's frames (zero-length
    // packets: a player repeats the one before). Constant quality drops none: 7 of 0…10, the
    // quality FFmpeg's guide suggests.
    enc->flags |= AV_CODEC_FLAG_QSCALE;
    enc->global_quality = FF_QP2LAMBDA * 7;
  }
  apply_controls(enc.get(), codec, o, enc_opts);
  set_user_encoder_options(enc.get(), codec, o, enc_opts);
  const FfmpegErrors ffmpeg;  // the encoder's own words: the detail FFmpeg's code lacks
  const int ret = avcodec_open2(enc.get(), codec, &enc_opts);
  std::string unknown;  // what open left in the dictionary, no option of this encoder took
  for (const AVDictionaryEntry* e = nullptr;
       (e = av_dict_get(enc_opts, "", e, AV_DICT_IGNORE_SUFFIX));)
    unknown += fmt::format("{}'{}'", unknown.empty() ? "" : ", ", e->key);
  av_dict_free(&enc_opts);
  if (ret < 0)
    throw input_error(fmt::format("{}: cannot open encoder {} for {}: {}{}", o.output, codec->name,
                                  to_string(format), av_error_text(ret), ffmpeg.why()));
  if (const auto ignored = ffmpeg.ignored(); !ignored.empty())
    throw usage_error(fmt::format("{}: encoder {} would go on without an option given: {}",
                                  o.output, codec->name, ignored));
  if (!unknown.empty())
    throw usage_error(fmt::format(
        "{}: encoder {} has no option {} (encoder_option; `ffmpeg -h encoder={}` lists its own)",
        o.output, codec->name, unknown, codec->name));
  return enc;
}

}  // namespace vpipe
