#include "transcode_output.hpp"

#include <fmt/format.h>

#include <cstring>
#include <new>
#include <set>
#include <string_view>
#include <tuple>

extern "C" {
#include <libavutil/display.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/pipeline/io/audio_encode.hpp"
#include "vpipe/pipeline/io/containers.hpp"
#include "vpipe/pipeline/io/media_stages.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/stream_facts.hpp"
#include "vpipe/pipeline/io/subtitle_encode.hpp"
#include "vpipe/pipeline/io/track_map.hpp"
#include "vpipe/pipeline/parallel/segment_encode.hpp"
#include "vpipe/pipeline/session/codec_open.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

namespace vpipe {

namespace {

// An input with an alpha channel (RGBA, yuva…, or VP8/VP9 whose alpha rides beside the
// picture, Matroska's AlphaMode) into an encoder format without one: the note says that
// the output is opaque, and the output does not repeat the input's AlphaMode tag (FFmpeg's
// own tool copies it onto a stream that has no alpha).
void drop_alpha(const AVStream* in, const AVCodecContext& encoder, AVStream* out,
                TranscodeReport& report) {
  const AVPixFmtDescriptor* from =
      av_pix_fmt_desc_get(static_cast<AVPixelFormat>(in->codecpar->format));
  const AVPixFmtDescriptor* to = av_pix_fmt_desc_get(encoder.pix_fmt);
  const AVDictionaryEntry* mode = av_dict_get(in->metadata, "alpha_mode", nullptr, 0);
  const bool side = mode && std::string_view(mode->value) == "1";
  if (side) av_dict_set(&out->metadata, "alpha_mode", nullptr, 0);
  if (!side && !(from && from->flags & AV_PIX_FMT_FLAG_ALPHA)) return;
  if (!side && to && to->flags & AV_PIX_FMT_FLAG_ALPHA) return;
  report.notes.push_back(
      fmt::format("the input has an alpha channel{}: the output ({} {}) is opaque",
                  side ? " beside its pictures, which FFmpeg's decoder does not read" : "",
                  encoder.codec->name, to ? to->name : "?"));
}

// TB and BT read as top and bottom first, as FFmpeg's own tool writes them for pictures
// coded as fields (avcodec.h's "displayed first" notwithstanding).
const char* first_field(AVFieldOrder order) {
  return order == AV_FIELD_TT || order == AV_FIELD_TB ? "top" : "bottom";
}
AVFieldOrder other_field_first(AVFieldOrder order) {
  switch (order) {
    case AV_FIELD_TT:
      return AV_FIELD_BB;
    case AV_FIELD_BB:
      return AV_FIELD_TT;
    case AV_FIELD_TB:
      return AV_FIELD_BT;
    case AV_FIELD_BT:
      return AV_FIELD_TB;
    default:
      return order;
  }
}

// The output's field order: the input's, the other field first where the chain swaps them
// (flip=v), or progressive where it deinterlaces. The note says which, and warns where a
// filter that mixes rows (resize, blur…) meets the fields before any deinterlace does:
// vpipe's filters, as FFmpeg's, treat each picture as one.
AVFieldOrder output_field_order(const TranscodeOutput::Source& in, const TranscodePlan& plan,
                                TranscodeReport& report) {
  const AVFieldOrder input = in.video->codecpar->field_order;
  if (!is_interlaced(input)) return input;
  std::string mixing, swapping;  // the filters that see the fields as one picture; that swap them
  int swaps = 0;
  bool deinterlaced = false;
  for (const auto& step : plan.chain) {
    if ((deinterlaced = step.filter->deinterlaces())) break;
    if (!step.filter->keeps_fields()) mixing += (mixing.empty() ? "" : ", ") + step.label;
    if (step.filter->swaps_fields()) swapping += (swaps++ ? ", " : "") + step.label;
  }
  const AVFieldOrder order = swaps % 2 ? other_field_first(input) : input;
  std::string note = fmt::format("input is interlaced ({} field first): ", first_field(input));
  if (deinterlaced)
    note += "deinterlaced, the output is progressive";
  else if (codes_fields(plan.encoder, plan.output))
    note += fmt::format("kept interlaced, {} codes its fields", plan.encoder->name);
  else
    note += fmt::format("kept interlaced, {} codes each picture as one (the field order a tag)",
                        plan.encoder->name);
  if (!deinterlaced && swaps % 2)
    note += fmt::format("; after {} the {} field is first", swapping, first_field(order));
  if (!mixing.empty())
    note += fmt::format("; {} mixes the two fields (put deinterlace before it)", mixing);
  report.notes.push_back(note);
  return deinterlaced ? AV_FIELD_PROGRESSIVE : order;
}

}  // namespace

UniqueAVCodecContext TranscodeOutput::open(TranscodeOptions& o, const TranscodePlan& plan,
                                           const Source& in, const std::atomic<int>* interrupt,
                                           TranscodeReport& report) {
  AVFormatContext* raw = nullptr;
  const std::string net = network_output_format(o.output);
  if (avformat_alloc_output_context2(&raw, nullptr, net.empty() ? nullptr : net.c_str(),
                                     o.output.c_str()) < 0 ||
      !raw)
    throw input_error(
        fmt::format("{}: cannot tell the container from the name (use .mp4, .mkv, "
                    ".mov, .ts…, udp://host:port for MPEG-TS over UDP, or null to "
                    "write nothing)",
                    o.output));
  file_.ctx.reset(raw);
  file_.path = o.output;
  AVFormatContext* oc = file_.ctx.get();
  // A ladder's muxer opens its segments and playlists itself: through the allowed protocols only.
  oc->protocol_whitelist = av_strdup(protocol_whitelist().c_str());
  file_.files.attach(oc);
  // A live run has no natural end: an MP4/MOV being written is fragmented, so
  // the file is playable at any moment, even if the process is killed. (Not
  // empty_moov: the moov would be written before the ADTS→ASC filter has seen
  // MPEG-TS's AAC, and the muxer refuses it.)
  const std::string oname = oc->oformat->name;
  if (plan.live && (oname == "mp4" || oname == "mov")) {
    av_opt_set(oc->priv_data, "movflags", "frag_keyframe+default_base_moof", 0);
    report.notes.push_back("live input: the MP4 is written fragmented (playable while written)");
  }
  if (!o.hls.empty() && oname == "hls") {  // a rendition of an HLS ladder (--hls)
    const auto dir = std::filesystem::path(o.output).parent_path();
    av_opt_set(oc->priv_data, "hls_time", fmt::format("{}", o.segment_s).c_str(), 0);
    av_opt_set_int(oc->priv_data, "hls_list_size", 0, 0);
    av_opt_set(oc->priv_data, "hls_playlist_type", "vod", 0);
    av_opt_set(oc->priv_data, "hls_flags", "independent_segments", 0);
    av_opt_set(oc->priv_data, "hls_segment_filename", (dir / "seg_%05d.ts").c_str(), 0);
    // Every rendition's times shifted alike: without it the muxer shifts each by its own
    // most negative DTS (B-frames, audio priming), and equal frames get unequal times.
    oc->output_ts_offset = 10 * AV_TIME_BASE;
  }
  if (oname == "image2") {  // each picture written whole (a temporary name, then renamed)
    av_opt_set_int(oc->priv_data, "atomic_writing", 1, 0);
    av_opt_set_int(oc->priv_data, "update", picture_output(o.output) == Picture::kOne, 0);
  }
  if (!o.dash.empty() && oname == "dash") {  // a rendition of a DASH ladder (--dash)
    av_opt_set(oc->priv_data, "seg_duration", fmt::format("{}", o.segment_s).c_str(), 0);
    av_opt_set_int(oc->priv_data, "use_template", 1, 0);
    av_opt_set_int(oc->priv_data, "use_timeline", 1, 0);
  }
  file_.side.stage(o);  // the encoder's own files: beside their targets until finished
  auto encoder = add_video(o, plan, in, report);
  copy_other_streams(o, in, report);
  copy_chapters(in, report);
  av_dict_copy(&oc->metadata, in.input->metadata, 0);
  if (!(oc->oformat->flags & AVFMT_NOFILE)) file_.open(o.output, o.keep_partial, interrupt);
  const FfmpegErrors ffmpeg;
  if (const int ret = avformat_write_header(oc, nullptr); ret < 0)
    throw input_error(
        fmt::format("cannot write '{}': {}{}", o.output, av_error_text(ret), ffmpeg.why()));
  return encoder;
}

UniqueAVCodecContext TranscodeOutput::add_video(TranscodeOptions& o, const TranscodePlan& plan,
                                                const Source& in, TranscodeReport& report) {
  AVFormatContext* oc = file_.ctx.get();
  if (o.encode_segments > 1) {  // every segment's encoder gets the output encoder's settings
    o.gop = encode_segment_frames(o.gop);
    if (o.encode_threads == 0) o.encode_threads = encode_threads_each(o.encode_segments);
    report.notes.push_back(
        fmt::format("encode: {} encoders at once on segments of {} frames, {} threads each",
                    o.encode_segments, o.gop, o.encode_threads));
  }
  // The picture keeps its display shape through the chain (non-square pixels: DV, HDV, DVD,
  // broadcast SD) and its display turn (a phone's rotation).
  const AVRational sar =
      sample_aspect_after(plan.chain, av_guess_sample_aspect_ratio(in.input, in.video, nullptr));
  // MXF and DV files state one frame rate in their time base (MXF refused 1/15360).
  const std::string container = oc->oformat->name;
  // A chain that changes the rate (fps=) sends frames on that rate's ticks: one tick is the
  // time base, as FFmpeg's fps filter makes it.
  const AVRational rate = plan.rate.value_or(in.frame_rate);
  const bool frame_rate_tb =
      plan.rate || ((container.rfind("mxf", 0) == 0 || container == "dv") && rate.num > 0);
  // The input's colour tags, or the chain's matrix, range and siting where it converted to
  // another or to RGB (GBR, full range).
  UniqueAVCodecContext tags(avcodec_alloc_context3(nullptr));
  if (!tags) throw std::bad_alloc();
  tags->color_primaries = in.decoder->color_primaries;
  tags->color_trc = in.decoder->color_trc;
  if (plan.recoloured || is_rgb(plan.output.pix_fmt))
    tags_of_colour(plan.colour, plan.output.pix_fmt).apply(tags.get());
  else
    ColourTags{in.decoder->colorspace, in.decoder->color_range, in.decoder->chroma_sample_location}
        .apply(tags.get());
  tags->field_order = output_field_order(in, plan, report);
  auto encoder = open_video_encoder(plan.encoder, plan.output,
                                    frame_rate_tb ? av_inv_q(rate) : in.video->time_base, rate,
                                    global_video_header(oc->oformat), o, tags.get(), sar, in.hdr10);
  video_out_ = avformat_new_stream(oc, nullptr);
  AVStream* video_out = video_out_;
  av_check(avcodec_parameters_from_context(video_out->codecpar, encoder.get()),
           "output video parameters");
  video_out->sample_aspect_ratio = encoder->sample_aspect_ratio;
  copy_display_matrix(in.video, video_out);
  const bool picture = picture_output(o.output) != Picture::kNone;
  if (const auto [matrix, size] = stream_side_data(in.video, AV_PKT_DATA_DISPLAYMATRIX);
      picture && matrix && size >= 9 * sizeof(std::int32_t)) {
    const double turn = av_display_rotation_get(reinterpret_cast<const std::int32_t*>(matrix));
    if (std::lround(turn) % 360 != 0)
      report.notes.push_back(fmt::format(
          "the input says to show it turned (a display matrix of {:.0f} degrees); a picture "
          "file holds no turn and vpipe has no transpose filter yet, so the picture is as "
          "coded, not turned",
          turn));
  }
  if (in.hdr10 && !in.hdr10->empty() && !picture) {  // a picture file holds none of it
    add_hdr10_side_data(video_out, *in.hdr10);
    report.notes.push_back(in.hdr10->describe());
  }
  // Its tags (language, a broadcast timecode, which MOV writes as a tmcd track), but not the
  // input's encoder: this output's is another.
  av_dict_copy(&video_out->metadata, in.video->metadata, 0);
  av_dict_set(&video_out->metadata, "encoder", nullptr, 0);
  drop_alpha(in.video, *encoder, video_out, report);
  video_out->time_base = encoder->time_base;
  video_out->avg_frame_rate = encoder->framerate;
  source_tb_.push_back(encoder->time_base);
  return encoder;
}

void TranscodeOutput::add_reencoded(const TranscodeOptions& o, unsigned index, AVStream* s,
                                    TranscodeReport& report, const std::string& why) {
  AVFormatContext* oc = file_.ctx.get();
  const AVCodec* codec = o.audio_codec.empty()
                             ? avcodec_find_encoder(usual_audio_codec(oc->oformat))
                             : avcodec_find_encoder_by_name(o.audio_codec.c_str());
  if ((!codec || codec->type != AVMEDIA_TYPE_AUDIO) && !o.audio_codec.empty())
    throw usage_error(
        fmt::format("audio_codec {}: FFmpeg has no audio encoder of that name", o.audio_codec));
  if (!codec || codec->type != AVMEDIA_TYPE_AUDIO)
    throw input_error(fmt::format("{}: no audio encoder {} for stream #{} ({})", o.output,
                                  o.audio_codec.empty() ? "for this container" : o.audio_codec,
                                  index, avcodec_get_name(s->codecpar->codec_id)));
  if (const auto* segments = segment_container(oc->oformat, codec->id);
      container_holds(segments, codec->id) == false)
    throw input_error(fmt::format("{}: {} cannot hold {} audio (audio_codec)", o.output,
                                  segments->name, codec->name));
  // The container's rate where it needs one (FLV, MXF), else the asked one, else the input's.
  const int container_rate = container_sample_rate(oc->oformat, codec->id,
                                                   o.audio_rate.value_or(s->codecpar->sample_rate));
  if (o.audio_rate && container_rate && container_rate != *o.audio_rate)
    throw usage_error(fmt::format("{}: audio_rate {}: {} takes {} Hz {} audio", o.output,
                                  *o.audio_rate, oc->oformat->name, container_rate, codec->name));
  AudioShape shape;
  shape.bitrate = o.audio_bitrate.value_or(0);
  shape.channels = o.audio_channels.value_or(0);
  shape.rate = container_rate ? container_rate : o.audio_rate.value_or(0);
  shape.exact = o.audio_channels || o.audio_rate;
  shape.global_header = (oc->oformat->flags & AVFMT_GLOBALHEADER) != 0;
  add_stream_through(index, s, std::make_unique<AudioReencoder>(s, codec, shape), report, why);
}

bool TranscodeOutput::add_converted_subtitles(unsigned index, AVStream* s, TranscodeReport& report,
                                              const std::string& why) {
  const AVOutputFormat* container = file_.ctx->oformat;
  // A ladder's playlists name no subtitle renditions: its segments' WebVTT would be orphans.
  if (segment_container(container, AV_CODEC_ID_NONE) != container) return false;
  const AVCodecID to = text_subtitle_codec(container, s->codecpar->codec_id);
  if (to == AV_CODEC_ID_NONE) return false;
  try {
    add_stream_through(index, s, std::make_unique<SubtitleReencoder>(s, to), report, why);
  } catch (const input_error& e) {  // the video is still worth writing: said, not fatal
    report.notes.push_back(fmt::format("stream #{} ({}) dropped: {}; converting it failed: {}",
                                       index, avcodec_get_name(s->codecpar->codec_id), why,
                                       e.what()));
  }
  return true;
}

void TranscodeOutput::add_stream_through(unsigned index, AVStream* s,
                                         std::unique_ptr<StreamReencoder> enc,
                                         TranscodeReport& report, const std::string& why) {
  AVFormatContext* oc = file_.ctx.get();
  AVStream* os = avformat_new_stream(oc, nullptr);
  if (!os) throw std::bad_alloc();
  av_check(avcodec_parameters_from_context(os->codecpar, enc->encoder()), "stream parameters");
  os->time_base = enc->encoder()->time_base;
  av_dict_copy(&os->metadata, s->metadata, 0);  // the language, the title
  os->disposition = s->disposition;
  output_index_[index] = os->index;
  reencoder_of_[index] = enc.get();
  source_tb_.push_back(os->time_base);
  // What the encoder changed beside the codec: channels mixed down (8 into MP2 or MP3 arrive
  // as 2), a sample rate it or the container needs.
  const AVCodecContext* e = enc->encoder();
  std::string changed;
  if (const int in = s->codecpar->ch_layout.nb_channels, out = e->ch_layout.nb_channels;
      s->codecpar->codec_type == AVMEDIA_TYPE_AUDIO && in > 0 && out != in)
    changed += fmt::format(", {} channels mixed to {} ({} has no {}-channel layout)", in, out,
                           e->codec->name, in);
  if (const int in = s->codecpar->sample_rate;
      s->codecpar->codec_type == AVMEDIA_TYPE_AUDIO && in > 0 && e->sample_rate != in)
    changed += fmt::format(", {} Hz resampled to {} Hz", in, e->sample_rate);
  report.notes.push_back(fmt::format("stream #{} ({}) re-encoded to {}{}: {}", index,
                                     avcodec_get_name(s->codecpar->codec_id), e->codec->name,
                                     changed, why));
  reencoders_.push_back(std::move(enc));
}

// An attachment (the fonts styled subtitles name) into Matroska, the one container
// that holds them: its file goes as it was, named. False: not copied.
bool TranscodeOutput::copy_attachment(AVStream* s, TranscodeReport& report) {
  AVFormatContext* oc = file_.ctx.get();
  // Matroska's muxer refuses, at the header, an attachment with no file name.
  if (std::string_view(oc->oformat->name) != "matroska" ||
      !av_dict_get(s->metadata, "filename", nullptr, 0))
    return false;
  AVStream* os = avformat_new_stream(oc, nullptr);
  if (!os) throw std::bad_alloc();
  av_check(avcodec_parameters_copy(os->codecpar, s->codecpar), "copying an attachment");
  os->codecpar->codec_tag = 0;
  av_dict_copy(&os->metadata, s->metadata, 0);  // filename, mimetype
  source_tb_.push_back(s->time_base);           // (an attachment has no packets)
  report.copied_streams++;
  return true;
}

// The input's chapters, as FFmpeg copies them: those inside a cut, clipped to it, and
// moved with the timestamps (the output's clock starts at zero). (Muxers without chapters, MPEG-TS,
// leave them out.)
void TranscodeOutput::copy_chapters(const Source& in, TranscodeReport& report) {
  AVFormatContext* oc = file_.ctx.get();
  const double from = in.cut && in.cut->start ? *in.cut->start : -1e300;
  const double until = in.cut && in.cut->end ? *in.cut->end : 1e300;
  const int kept = vpipe::copy_chapters(in.input, oc, from, until, in.clock_shift_s);
  if (kept < 0)
    report.notes.push_back(fmt::format("chapters: {} left out: {} holds none",
                                       in.input->nb_chapters, oc->oformat->name));
  else if (kept < static_cast<int>(in.input->nb_chapters))
    report.notes.push_back(
        fmt::format("chapters: {} of {} inside the cut", kept, in.input->nb_chapters));
}

// Audio and subtitles the container can hold, copied; audio it cannot, re-encoded
// (--audio auto), and text subtitles converted to its text format; the rest
// dropped, each with a note.
// With maps, only the audio and subtitle tracks one names (and every map names one).
void TranscodeOutput::copy_other_streams(const TranscodeOptions& o, const Source& in,
                                         TranscodeReport& report) {
  AVFormatContext* oc = file_.ctx.get();
  output_index_.assign(in.input->nb_streams, -1);
  reencoder_of_.assign(in.input->nb_streams, nullptr);
  const AudioMode mode = o.audio == AudioMode::kAuto && !o.audio_encode_option().empty()
                             ? AudioMode::kEncode
                             : o.audio;
  TrackMap map(o.maps);
  for (unsigned i = 0; i < in.input->nb_streams; ++i) {
    AVStream* s = in.input->streams[i];
    const auto type = s->codecpar->codec_type;
    if (static_cast<int>(i) == in.video_index) continue;
    if (!map.keeps(s)) {
      report.notes.push_back(
          fmt::format("stream #{} ({}) left out: no map names it", i, map.describe(s)));
      continue;
    }
    if (type == AVMEDIA_TYPE_ATTACHMENT && copy_attachment(s, report)) continue;
    if (type != AVMEDIA_TYPE_AUDIO && type != AVMEDIA_TYPE_SUBTITLE) {
      // Data (a timecode track: its timecode goes on the video stream's tags), attachments
      // outside Matroska, and further video streams: said, not silently gone.
      char tag[AV_FOURCC_MAX_STRING_SIZE] = {};
      const char* media = av_get_media_type_string(type);
      const std::string what = s->codecpar->codec_id != AV_CODEC_ID_NONE
                                   ? avcodec_get_name(s->codecpar->codec_id)
                                   : av_fourcc_make_string(tag, s->codecpar->codec_tag);
      const bool mkv = std::string_view(oc->oformat->name) == "matroska";
      const std::string why =
          type != AVMEDIA_TYPE_ATTACHMENT
              ? "vpipe copies audio and subtitles beside the video it transcodes"
          : mkv ? "it has no file name, which Matroska needs"
                : fmt::format("{} holds no attachments (Matroska does)", oc->oformat->name);
      report.notes.push_back(fmt::format("stream #{} ({}, {}) not copied: {}", i,
                                         media ? media : "unknown", what, why));
      continue;
    }
    const bool audio = type == AVMEDIA_TYPE_AUDIO;
    const std::string cannot = cannot_hold(oc->oformat, s->codecpar);
    const bool holds = cannot.empty();
    if (audio && mode == AudioMode::kNone) {
      report.notes.push_back(fmt::format("stream #{} (audio) left out (audio none)", i));
      continue;
    }
    if (audio && mode == AudioMode::kCopy && !holds)
      throw input_error(fmt::format(
          "{}: stream #{} ({}) cannot be copied as it is: {} (audio copy; audio auto re-encodes "
          "it)",
          o.output, i, avcodec_get_name(s->codecpar->codec_id), cannot));
    if (audio && (mode == AudioMode::kEncode || !holds) &&
        usual_audio_codec(oc->oformat) != AV_CODEC_ID_NONE) {
      add_reencoded(o, i, s, report,
                    mode == AudioMode::kEncode ? std::string("asked (audio encode)") : cannot);
      continue;
    }
    if (!holds && !audio && add_converted_subtitles(i, s, report, cannot)) continue;
    if (!holds) {
      report.notes.push_back(fmt::format("stream #{} ({}) dropped: {}", i,
                                         avcodec_get_name(s->codecpar->codec_id), cannot));
      continue;
    }
    AVStream* os = avformat_new_stream(oc, nullptr);
    av_check(avcodec_parameters_copy(os->codecpar, s->codecpar), "copying stream parameters");
    os->codecpar->codec_tag = 0;
    os->time_base = s->time_base;
    av_dict_copy(&os->metadata, s->metadata, 0);
    os->disposition = s->disposition;
    output_index_[i] = os->index;
    source_tb_.push_back(s->time_base);
    report.copied_streams++;
  }
  map.check_each_matched(o.input);
}

}  // namespace vpipe
