#include "vpipe/pipeline/session/transcode_plan.hpp"

#include "vpipe/pipeline/io/track_map.hpp"

#include "vpipe/pipeline/session/codec_open.hpp"
#include "vpipe/pipeline/session/encoder_controls.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/containers.hpp"
#include "vpipe/pipeline/io/protocols.hpp"

namespace vpipe {

namespace {

std::optional<CudaSegment> segment_of(const std::vector<ConfiguredFilter>& chain) {
  const auto on_cuda = cuda_steps(chain);
  const auto first = std::find(on_cuda.begin(), on_cuda.end(), true);
  if (first == on_cuda.end()) return std::nullopt;
  const auto last = std::find(on_cuda.rbegin(), on_cuda.rend(), true);
  return CudaSegment{static_cast<std::size_t>(first - on_cuda.begin()),
                     static_cast<std::size_t>(on_cuda.rend() - last - 1)};
}

// NVDEC's frames suit a chain whose CUDA filters come first, unbroken by a CPU
// filter (a format conversion inserted for NV12 would be one). Filters that
// pass frames through for this input do not count.
bool starts_on_gpu(const std::vector<ConfiguredFilter>& chain, bool null_output) {
  std::vector<bool> gpu;
  const auto on_cuda = cuda_steps(chain);
  for (std::size_t i = 0; i < chain.size(); ++i)
    if (!chain[i].filter->is_identity()) gpu.push_back(on_cuda[i]);
  if (gpu.empty()) return null_output && chain.empty();
  for (std::size_t i = 1; i < gpu.size(); ++i)
    if (gpu[i] && !gpu[i - 1]) return false;
  return gpu.front();
}

void resolve_device(const TranscodeOptions& o, const MachineProbe& m, TranscodePlan& p) {
  if (o.decode == Decode::kNvdec && o.device == Device::kCpu)
    throw input_error("decode nvdec needs the CUDA path, and the device asked for is the CPU");
  const std::string reason = o.device == Device::kCpu ? std::string() : m.cuda_unavailable;
  if (o.device == Device::kCuda && !reason.empty())
    throw input_error(fmt::format("device cuda: {}", reason));
  if (o.decode == Decode::kNvdec && !reason.empty())
    throw input_error(fmt::format("decode nvdec: {}", reason));
  p.device = o.device != Device::kCpu && reason.empty() ? Device::kCuda : Device::kCpu;
  if (o.device == Device::kAuto)
    p.notes.push_back(p.device == Device::kCuda
                          ? std::string("device auto: CUDA path")
                          : fmt::format("device auto: CPU path ({})", reason));
}

// The decoder, and the chain negotiated for its frames.
void choose_decoder(const TranscodeOptions& o, const ProbedInput& in, TranscodePlan& p) {
  if (o.decode != Decode::kCpu && p.device == Device::kCuda) {
    const std::string& why = in.nvdec_unsupported;
    if (o.decode == Decode::kNvdec && !why.empty())
      throw input_error(fmt::format("decode nvdec: {}: {}", o.input, why));
    p.nvdec = why.empty();
    if (!why.empty()) p.notes.push_back(fmt::format("decode auto: CPU ({})", why));
  }
  // NVDEC's frames: NV12, or P010 for 10-bit video (the chain narrows it first)
  const FrameFormat nvdec_format{
      in.format.pix_fmt == AV_PIX_FMT_YUV420P10LE ? AV_PIX_FMT_P010LE : AV_PIX_FMT_NV12,
      in.format.width, in.format.height};
  p.chain = build_chain(p.specs, p.nvdec ? nvdec_format : in.format, in.colour);
  if (p.nvdec && o.decode == Decode::kAuto && !starts_on_gpu(p.chain, p.null_output)) {
    p.nvdec = false;
    p.notes.push_back(
        p.chain.empty()
            ? "decode auto: CPU (no CUDA filter to take NVDEC's frames)"
            : "decode auto: CPU (the chain does not start with its CUDA filters in NV12)");
    p.chain = build_chain(p.specs, in.format, in.colour);
  }
  p.decoded = p.nvdec ? nvdec_format : in.format;
}

// A chain that narrows a deeper input to 8 bits for its filters (to_8bit) says so; it is
// refused where the encoder would have kept the depth and --pix-fmt did not ask for 8 bits
// (issue #43: 10-bit stays 10-bit; 8 bits is chosen explicitly).
void check_narrowing(const TranscodeOptions& o, TranscodePlan& p) {
  const auto narrow = std::find_if(p.chain.begin(), p.chain.end(),
                                   [](const ConfiguredFilter& c) { return c.label == "to_8bit"; });
  if (narrow == p.chain.end()) return;
  const int depth = av_pix_fmt_desc_get(p.decoded.pix_fmt)->comp[0].depth;
  const std::string first =
      narrow + 1 == p.chain.end() ? std::string("the filters") : (narrow + 1)->label;
  if (p.encoder && o.pix_fmt.empty()) {
    const AVPixelFormat kept = encoder_format(p.encoder, p.decoded.pix_fmt);
    if (av_pix_fmt_desc_get(kept)->comp[0].depth > 8)
      throw input_error(fmt::format(
          "{}: a {}-bit input, and {} takes 8-bit frames (vpipe's filters have no {}-bit "
          "kernels): {} would keep {} bits without filters. Add pix_fmt yuv420p to narrow it to 8 "
          "bits for the filters, or drop the filters to keep {} bits",
          o.input, depth, first, depth, p.encoder->name, depth, depth));
  }
  p.notes.push_back(fmt::format(
      "{}-bit input: {} takes 8-bit frames, so the chain narrows it to 8 bits (rounded) before "
      "it; without filters it stays {} bits",
      depth, first, depth));
}

// An encoder of 4:2:0 (or 4:2:2) video may take only sizes that are multiples
// of its chroma subsampling: then an odd-sized picture is padded (or cropped)
// to fit, with a note, unless --fit error.
void fit_to_encoder(const TranscodeOptions& o, TranscodePlan& p) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(p.output.pix_fmt);
  if (!d) return;
  const int mw = 1 << d->log2_chroma_w, mh = 1 << d->log2_chroma_h;
  const int w = p.output.width, h = p.output.height;
  if ((w % mw == 0 && h % mh == 0) || encoder_takes_size(p.encoder, p.output)) return;
  if (o.fit == Fit::kError)
    throw input_error(
        fmt::format("{}: {} takes {} pictures in multiples of {}x{}, and these are {}x{} "
                    "(fit pad or fit crop, or a resize in the filters)",
                    o.output, p.encoder->name, d->name, mw, mh, w, h));
  const bool pad = o.fit == Fit::kPad || w < mw || h < mh;  // nothing is left to crop to
  const int fw = pad ? (w + mw - 1) / mw * mw : w / mw * mw;
  const int fh = pad ? (h + mh - 1) / mh * mh : h / mh * mh;
  const std::string spec =
      pad ? fmt::format("pad=w={}:h={}", fw, fh) : fmt::format("crop=w={}:h={}:x=0:y=0", fw, fh);
  for (auto& c : build_chain(parse_chain(spec), p.output, p.colour))
    p.chain.push_back(std::move(c));
  p.output = p.chain.back().out;
  p.notes.push_back(fmt::format("fit {}: {}x{} {} to {}x{} ({} takes {} in multiples of {}x{})",
                                pad ? "pad" : "crop", w, h, pad ? "padded" : "cropped", fw, fh,
                                p.encoder->name, d->name, mw, mh));
}

// The CUDA segment, and the checks and notes that go with it.
void place_cuda_segment(const TranscodeOptions& o, TranscodePlan& p) {
  if (p.device != Device::kCuda) return;
  p.cuda = segment_of(p.chain);
  if (!p.cuda) {
    if (std::any_of(p.chain.begin(), p.chain.end(),
                    [](const auto& c) { return !c.filter->is_identity(); }))
      p.notes.push_back("no CUDA filter in this chain: it runs on the CPU");
  } else {
    const auto on_cuda = cuda_steps(p.chain);
    for (std::size_t i = p.cuda->first; i <= p.cuda->last; ++i)
      if (!on_cuda[i] && !p.chain[i].filter->is_identity())
        throw input_error(
            fmt::format("'{}' has no CUDA implementation and sits between CUDA "
                        "filters; run the chain on the CPU device",
                        p.chain[i].label));
  }
  p.device_memory = p.cuda.has_value() || p.nvdec;
  p.decode_into_pinned = !p.nvdec && p.cuda && p.cuda->first == 0 && o.host == HostMemory::kPinned;
}

}  // namespace

bool encoder_takes_size(const AVCodec* codec, const FrameFormat& f) {
  // The library encoders are not tried: libx264 leaks when its open fails, SVT-AV1 cannot be
  // closed unfed. These take odd 4:2:0 sizes, as FFmpeg's tool writes them (checked against it
  // by EdgeCase.OddSizesFitTheEncoder); libx264, libx265, libsvtav1 and xvid do not.
  static constexpr std::string_view kOddSizes[] = {"libvpx", "libvpx-vp9", "libaom-av1", "librav1e",
                                                   "libtheora"};
  const std::string_view name = codec->name;
  if (name.rfind("lib", 0) == 0)
    return std::find(std::begin(kOddSizes), std::end(kOddSizes), name) != std::end(kOddSizes);
  if ((codec->capabilities & AV_CODEC_CAP_HARDWARE) || codec->wrapper_name) return false;
  const QuietFfmpegLog quiet;  // a trial: its refusal is not the user's news
  UniqueAVCodecContext c(avcodec_alloc_context3(codec));
  if (!c) return false;
  c->width = f.width;
  c->height = f.height;
  c->pix_fmt = f.pix_fmt;
  c->time_base = AVRational{1, 25};
  c->framerate = AVRational{25, 1};
  c->thread_count = 1;
  return avcodec_open2(c.get(), codec, nullptr) >= 0;
}

// The container the output's name picks, checked before any file is touched.
const AVOutputFormat* check_container(const std::string& output) {
  const AVOutputFormat* container = output_container(output);
  if (!container)
    throw input_error(
        fmt::format("{}: cannot tell the container from the name (use .mp4, .mkv, "
                    ".mov, .ts…, udp://host:port for MPEG-TS over UDP, or null to "
                    "write nothing)",
                    output));
  const std::string_view name = container->name;
  if (name == "image2pipe" || name == "apng")
    throw input_error(
        fmt::format("{}: {} is not written; a picture goes to a .png or .jpg file (one "
                    "picture, or a numbered sequence: img-%04d.png), video to .mp4, .mkv…",
                    output, name));
  // An audio container (no video codec of its own, or only a cover picture:
  // mp3, flac, aiff) fails at its header, after everything was opened.
  const bool cover_only =
      container->video_codec == AV_CODEC_ID_PNG && container->audio_codec != AV_CODEC_ID_NONE;
  if (container->video_codec == AV_CODEC_ID_NONE || cover_only)
    throw input_error(
        fmt::format("{}: {} is an audio container; vpipe writes video files (.mp4, .mkv, .mov, "
                    ".webm, .ts…)",
                    output, name));
  return container;
}

// For a refusal: a common container other than `refused` that FFmpeg says holds `codec`
// (".mov" for DNxHD refused by .mkv), or empty.
std::string container_holding(AVCodecID codec, const AVOutputFormat* refused) {
  for (const std::string ext : {".mkv", ".mov", ".mp4", ".avi", ".ts", ".nut"}) {
    const AVOutputFormat* f = av_guess_format(nullptr, ("x" + ext).c_str(), nullptr);
    if (f && std::string_view(f->name) != refused->name && container_holds(f, codec) == true)
      return ext;
  }
  return {};
}

namespace {

// The encoder the options and the container name (choose_encoder, before its controls' check).
const AVCodec* pick_encoder(const TranscodeOptions& o, const MachineProbe& m, TranscodePlan& p) {
  const AVOutputFormat* container = check_container(o.output);
  std::string name = o.encoder;
  if (name == "auto") {
    name = "libx264";
    if (p.device == Device::kCuda && m.nvenc) {
      const auto [usable, detail] = m.nvenc();
      if (usable) name = "h264_nvenc";
      p.notes.push_back(usable ? std::string("encoder auto: h264_nvenc (NVENC present)")
                               : fmt::format("encoder auto: libx264, this device has no usable "
                                             "NVENC ({})",
                                             detail));
    }
  }
  const AVCodec* codec = avcodec_find_encoder_by_name(name.c_str());
  if (!codec || codec->type != AVMEDIA_TYPE_VIDEO)
    throw usage_error(fmt::format("encoder {}: no such video encoder in this FFmpeg build", name));
  // A ladder's rendition is written into its segments' container (HLS: MPEG-TS): asked of it.
  const auto holds = [&](AVCodecID id) {
    return container_holds(segment_container(container, id), id) != false;
  };
  // A picture (.png, .jpg): its own codec, unless an encoder is named.
  const bool picture = picture_output(o.output) != Picture::kNone;
  if (holds(codec->id) && !(picture && o.encoder == "auto")) return codec;
  // --encoder auto and a container without H.264 (.webm, .ogv, .gif): its own codec.
  // The container's own (a picture's by its name: .png PNG, .jpg MJPEG).
  const AVCodec* native = avcodec_find_encoder(
      av_guess_codec(container, nullptr, o.output.c_str(), nullptr, AVMEDIA_TYPE_VIDEO));
  if (o.encoder == "auto" && native && (picture || holds(native->id))) {
    p.notes.push_back(fmt::format("encoder auto: {} ({} cannot hold {})", native->name,
                                  container->name, avcodec_get_name(codec->id)));
    return native;
  }
  const std::string other = container_holding(codec->id, container);
  const AVOutputFormat* segments = segment_container(container, codec->id);
  const std::string who = segments == container
                              ? fmt::format("the {} container", container->name)
                              : fmt::format("{}'s {} segments", container->name, segments->name);
  throw input_error(
      fmt::format("{}: {} cannot hold {} video (encoder {}); pick another "
                  "encoder{} or another container{}",
                  o.output, who, avcodec_get_name(codec->id), codec->name,
                  native ? fmt::format(" ({} fits it)", native->name) : std::string(),
                  other.empty() ? std::string() : fmt::format(" ({} holds it)", other)));
}

}  // namespace

const AVCodec* choose_encoder(const TranscodeOptions& o, const MachineProbe& m, TranscodePlan& p) {
  const AVCodec* codec = pick_encoder(o, m, p);
  check_controls(codec, o);  // the one chosen: a picture's PNG or MJPEG, not libx264
  return codec;
}

QueuePlan plan_queues(std::size_t depth) {
  QueuePlan q;
  q.packets = depth * 2;
  q.mux = depth * 8;
  q.frames = depth;
  q.upload_slots = depth + 2;
  // The slots are the encoder's input frames: enough for the queue after the
  // download, the encoder's hands and the download in progress.
  q.download_slots = depth + 3;
  return q;
}

namespace {
// pix_fmt: the format asked for, which the encoder must take (its list, when it has one).
AVPixelFormat asked_format(const TranscodeOptions& o, const AVCodec* codec) {
  const AVPixelFormat want = av_get_pix_fmt(o.pix_fmt.c_str());
  if (want == AV_PIX_FMT_NONE)
    throw usage_error(fmt::format("pix_fmt {}: not a pixel format FFmpeg knows", o.pix_fmt));
  if (!codec->pix_fmts) return want;
  std::string takes;
  for (const AVPixelFormat* f = codec->pix_fmts; *f != AV_PIX_FMT_NONE; ++f) {
    if (*f == want) return want;
    takes += fmt::format("{}{}", takes.empty() ? "" : ", ", av_get_pix_fmt_name(*f));
  }
  throw usage_error(fmt::format("{}: encoder {} does not take pix_fmt {} (it takes {})", o.output,
                                codec->name, o.pix_fmt, takes));
}

// The note when the encoder's format holds fewer bits a sample than the frames: "10-bit frames:
// libx264 codes at most 8 bits here, so yuv420p"; a format whose samples differ in depth (GIF's
// rgb8) gives each, and its colours. Empty: no bits lost.
std::string depth_note(AVPixelFormat from, AVPixelFormat to, const char* encoder) {
  const AVPixFmtDescriptor *f = av_pix_fmt_desc_get(from), *t = av_pix_fmt_desc_get(to);
  int deepest = 0;
  std::vector<int> depths;
  for (int c = 0; c < t->nb_components; ++c) {
    depths.push_back(t->comp[c].depth);
    deepest = std::max(deepest, t->comp[c].depth);
  }
  if (deepest >= f->comp[0].depth) return {};
  if (std::all_of(depths.begin(), depths.end(), [&](int d) { return d == deepest; }))
    return fmt::format("{}-bit frames: {} codes at most {} bits here, so {}", f->comp[0].depth,
                       encoder, deepest, av_get_pix_fmt_name(to));
  return fmt::format("{}-bit frames: {} codes {}-bit samples here, so {} ({} colours)",
                     f->comp[0].depth, encoder, fmt::join(depths, "-"), av_get_pix_fmt_name(to),
                     1L << av_get_bits_per_pixel(t));
}

// MJPEG's pictures are JPEG's, full range: a yuv format becomes its yuvj twin where the encoder
// lists it (format expands the range; the encoder refuses limited-range yuv420p), whichever
// way the format was chosen (RGB in went to yuv420p, and the encoder did not open).
AVPixelFormat jpeg_range_twin(const AVCodec* codec, AVPixelFormat f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
  const std::string name = d ? d->name : "";
  if (codec->id != AV_CODEC_ID_MJPEG || name.rfind("yuv", 0) != 0 || is_jpeg_range(f)) return f;
  for (const AVPixelFormat* g = codec->pix_fmts; *g != AV_PIX_FMT_NONE; ++g)
    if (av_get_pix_fmt(("yuvj" + name.substr(3)).c_str()) == *g) return *g;
  return f;
}

AVPixelFormat encoder_layout(const AVCodec* codec, AVPixelFormat want) {
  const AVPixFmtDescriptor* w = av_pix_fmt_desc_get(want);
  for (const AVPixelFormat* f = codec->pix_fmts; *f != AV_PIX_FMT_NONE; ++f)
    if (*f == want) return want;
  // The same picture in another layout (NVDEC's p010le → libx265's yuv420p10le): the depth kept;
  // else the deepest the encoder codes below it (12-bit into libx264: 10 bits, not 8).
  AVPixelFormat shallower = AV_PIX_FMT_NONE;
  int shallower_depth = 0;
  // A palette's one component is an index into RGB colours, not a grey level (pal8 went to
  // libx264's gray: PSNR 7 dB): no layout of the encoder's is its own.
  const bool palette = w && (w->flags & AV_PIX_FMT_FLAG_PAL);
  for (const AVPixelFormat* f = codec->pix_fmts; w && !palette && *f != AV_PIX_FMT_NONE; ++f) {
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(*f);
    if (d->nb_components != w->nb_components || d->log2_chroma_w != w->log2_chroma_w ||
        d->log2_chroma_h != w->log2_chroma_h ||
        (d->flags & AV_PIX_FMT_FLAG_RGB) != (w->flags & AV_PIX_FMT_FLAG_RGB) ||
        (d->flags & AV_PIX_FMT_FLAG_BE) || (d->flags & AV_PIX_FMT_FLAG_HWACCEL))
      continue;
    const int depth = d->comp[0].depth;
    if (depth == w->comp[0].depth) return *f;
    if (depth < w->comp[0].depth && depth > shallower_depth) {
      shallower = *f;
      shallower_depth = depth;
    }
  }
  if (shallower != AV_PIX_FMT_NONE) return shallower;
  for (const AVPixelFormat* f = codec->pix_fmts; *f != AV_PIX_FMT_NONE; ++f)
    if (*f == AV_PIX_FMT_YUV420P) return *f;
  return codec->pix_fmts[0];
}

}  // namespace

AVPixelFormat encoder_format(const AVCodec* codec, AVPixelFormat want) {
  if (!codec->pix_fmts) return want;
  return jpeg_range_twin(codec, encoder_layout(codec, want));
}

std::vector<std::string> TranscodePlan::labels() const {
  std::vector<std::string> out;
  for (const auto& c : chain) out.push_back(c.label);
  return out;
}

namespace {

// A cut's options agree with one another and with the input (before it opens).
void check_cut(const TranscodeOptions& o) {
  if (o.thumbnail_s &&
      (o.start_s || o.start_frame || o.end_s || o.end_frame || o.duration_s || o.max_frames))
    throw usage_error(
        "thumbnail is one picture at its time (ss T, frames 1): give no other cut or frames");
  if (picture_output(o.output) == Picture::kOne && o.max_frames && *o.max_frames > 1)
    throw usage_error(fmt::format(
        "{}: one picture, not {} frames: name a numbered sequence for more (img-%04d.png)",
        o.output, *o.max_frames));
  // One picture stops the run at one frame: the other outputs would have one frame too.
  std::vector<std::string> names = {o.output};
  for (const auto& each : o.outputs) names.push_back(each.substr(0, each.find(':')));
  for (const auto& name : names)
    if (names.size() > 1 && picture_output(name) == Picture::kOne)
      throw usage_error(fmt::format(
          "{}: one picture beside other outputs (they would get one frame too): write it in a "
          "run of its own, or a numbered sequence (img-%04d.png)",
          name));
  if (o.start_s && o.start_frame) throw usage_error("ss and ss_frame: give one start");
  if ((o.end_s ? 1 : 0) + (o.end_frame ? 1 : 0) + (o.duration_s ? 1 : 0) > 1)
    throw usage_error("to, to_frame and duration: give one end");
  if (o.end_s && *o.end_s <= o.start_s.value_or(0))
    throw usage_error(
        fmt::format("to {} s: not after the start ({} s)", *o.end_s, o.start_s.value_or(0)));
  if (o.end_frame && *o.end_frame <= o.start_frame.value_or(0))
    throw usage_error(fmt::format("to_frame {}: not after the start frame ({})", *o.end_frame,
                                  o.start_frame.value_or(0)));
  if (o.duration_s && !(*o.duration_s > 0)) throw usage_error("duration 0: expected a time > 0");
  if (is_live_input(o.input) && (o.start_s || o.start_frame || o.end_s || o.end_frame))
    throw usage_error(fmt::format(
        "{}: a live input has no start to count from nor a place to seek to; cut it with "
        "duration only",
        o.input));
}

// A map that would choose nothing is refused, as one naming no track is (TrackMap): a null
// output writes no tracks, and audio none leaves out every audio track a map names.
void check_maps(const TranscodeOptions& o) {
  for (const auto& m : o.maps) {
    if (o.output == "null")
      throw usage_error(fmt::format("map {}: output null writes no tracks", m));
    if (o.audio == AudioMode::kNone && parse_track_selector(m).type == AVMEDIA_TYPE_AUDIO)
      throw usage_error(
          fmt::format("map {}: audio none leaves every audio track out; give one or the other", m));
  }
}

}  // namespace

void check_options(const TranscodeOptions& o) {
  if (o.smart_cut && o.encoder != "copy")
    throw usage_error(fmt::format(
        "smart_cut: takes encoder copy (the GOPs inside the cut are copied, only its edges "
        "re-encoded); encoder {} re-encodes all of it, exact without it",
        o.encoder));
  if (const AVCodec* a =
          o.audio_codec.empty() ? nullptr : avcodec_find_encoder_by_name(o.audio_codec.c_str());
      !o.audio_codec.empty() && (!a || a->type != AVMEDIA_TYPE_AUDIO))
    throw usage_error(
        fmt::format("audio_codec {}: FFmpeg has no audio encoder of that name", o.audio_codec));
  // An audio option on copied audio would do nothing: refused (auto re-encodes for them).
  if ((o.audio == AudioMode::kCopy || o.audio == AudioMode::kNone) &&
      !o.audio_encode_option().empty())
    throw usage_error(fmt::format(
        "{}: the audio is {} (audio {}), so it is not encoded; leave audio at auto or encode to "
        "apply it",
        o.audio_encode_option(), o.audio == AudioMode::kCopy ? "copied" : "left out",
        name_of(o.audio)));
  if (o.loop < 1) throw usage_error(fmt::format("loop {}: expected 1 or more", o.loop));
  if (!(o.stall_timeout_s > 0))
    throw usage_error(fmt::format("stall timeout {}: expected seconds > 0", o.stall_timeout_s));
  if (o.reconnect < 0)
    throw usage_error(fmt::format("reconnect {}: expected 0 or more", o.reconnect));
  if (o.queue_depth < 1) throw usage_error("queue depth 0: expected 1 or more");
  if (!ladder_dir(o).empty() && (o.encode_segments > 1 || o.streams > 1))
    throw usage_error(
        fmt::format("{} with encode_segments or streams: a ladder's keyframes are forced by one "
                    "encoder per rendition; leave those out",
                    o.hls.empty() ? "dash" : "hls"));
  if (!o.outputs.empty() && o.streams > 1)
    throw usage_error(fmt::format(
        "outputs with streams {}: several outputs are one decode; give one or the other",
        o.streams));
  for (const auto& kv : o.input_options)
    if (const auto eq = kv.find('='); eq == std::string::npos || eq == 0)
      throw usage_error(fmt::format("input_option {}: expected key=value", kv));
  if (o.input.empty() || o.output.empty()) throw usage_error("need an input and an output path");
  check_cut(o);
  check_maps(o);
  if (o.encode_segments > 1 &&
      (o.realtime || is_live_input(o.input) || !network_output_format(o.output).empty()))
    throw usage_error(fmt::format(
        "encode_segments {}: holds {} segments of frames before they leave; not for a live "
        "input, a network output or realtime (use encode_threads)",
        o.encode_segments, o.encode_segments));
}

Picture picture_output(const std::string& output) {
  const AVOutputFormat* f = output == "null" ? nullptr : output_container(output);
  if (!f || std::string_view(f->name) != "image2") return Picture::kNone;
  return av_filename_number_test(output.c_str()) ? Picture::kSequence : Picture::kOne;
}

void settle_pictures(TranscodeOptions& o) {
  check_cut(o);
  if (o.thumbnail_s) {
    o.start_s = *o.thumbnail_s;
    o.max_frames = 1;
    o.thumbnail_s.reset();
  }
  if (picture_output(o.output) == Picture::kOne && !o.max_frames) o.max_frames = 1;
}

std::vector<FilterSpec> check_before_opening(const TranscodeOptions& o) {
  check_options(o);
  check_encoder_options(o);  // a bad profile, level, rate or encoder_option: before any work
  auto specs = parse_chain(o.filters);
  for (const auto& s : specs) (void)parse_params(FilterRegistry::instance().info(s.name), s.args);
  return specs;
}

TranscodePlan plan(const TranscodeOptions& o, const ProbedInput& in, const MachineProbe& machine) {
  return plan(o, check_before_opening(o), in, machine);
}

TranscodePlan plan(const TranscodeOptions& o, std::vector<FilterSpec> specs, const ProbedInput& in,
                   const MachineProbe& machine) {
  TranscodePlan p;
  p.null_output = o.output == "null";
  p.live = is_live_input(o.input);
  p.drop = o.drop == Drop::kDropOldest       ? DropPolicy::kDropOldest
           : o.drop == Drop::kDropNewest     ? DropPolicy::kDropNewest
           : o.drop == Drop::kAuto && p.live ? DropPolicy::kDropNewest
                                             : DropPolicy::kBlock;
  p.specs = std::move(specs);
  resolve_device(o, machine, p);
  choose_decoder(o, in, p);
  p.output = p.chain.empty() ? p.decoded : p.chain.back().out;
  p.colour = p.chain.empty() ? in.colour : p.chain.back().colour;
  if (!p.null_output) p.encoder = choose_encoder(o, machine, p);
  check_narrowing(o, p);
  if (!p.null_output) {
    if (const auto want = o.pix_fmt.empty() ? encoder_format(p.encoder, p.output.pix_fmt)
                                            : asked_format(o, p.encoder);
        want != p.output.pix_fmt) {
      if (auto note = depth_note(p.output.pix_fmt, want, p.encoder->name);
          !note.empty() && o.pix_fmt.empty())
        p.notes.push_back(std::move(note));
      auto conv = build_chain(parse_chain(fmt::format("format={}", av_get_pix_fmt_name(want))),
                              p.output, p.colour);
      for (auto& c : conv) p.chain.push_back(std::move(c));
      p.output = p.chain.back().out;
    }
    fit_to_encoder(o, p);
    p.colour = p.chain.empty() ? in.colour : p.chain.back().colour;  // a yuvj format is full
  }
  // RGB in, Y'CbCr out: the chain chose the matrix, so the output names it (players read an
  // untagged HD picture as BT.709; vpipe's RGB, as swscale's, converts as BT.601).
  const bool from_rgb = is_rgb(p.decoded.pix_fmt) && !is_rgb(p.output.pix_fmt);
  p.recoloured = p.colour != in.colour || from_rgb;
  if (from_rgb)
    p.notes.push_back(fmt::format("colour: RGB converted to Y'CbCr as {}; the output is tagged so",
                                  colour_name(p.colour)));
  else if (p.recoloured)
    p.notes.push_back(fmt::format("colour: the chain converts {} to {}; the output is tagged so",
                                  colour_name(in.colour), colour_name(p.colour)));
  place_cuda_segment(o, p);
  p.rate = rate_made_by(p.chain);
  p.queues = plan_queues(o.queue_depth);
  return p;
}

}  // namespace vpipe
