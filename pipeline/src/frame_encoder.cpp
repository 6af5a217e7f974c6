#include "vpipe/pipeline/frame_encoder.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "vpipe/memory/errors.hpp"
#include "vpipe/pipeline/paths.hpp"
#include "vpipe/pipeline/transcode.hpp"
#include "vpipe/pipeline/transcode_plan.hpp"

namespace vpipe {

// Members in the order they must die, last first: the staging frames and the
// converter hold nothing of the others; the encoder is drained into the muxer
// by close() before anything goes; the audio source only feeds the muxer.
struct FrameEncoder::Impl {
  explicit Impl(FrameEncoderOptions options);
  void open(const FrameFormat& format);
  void add_audio();
  void pump_audio(double until_s);  // copy source audio up to this time (seconds)
  void send(AVFrame* frame);        // null: flush
  [[nodiscard]] const Frame& on_host(const Frame& frame);

  FrameEncoderOptions o;
  TranscodeOptions encoder_options;  // what open_video_encoder reads (quality, path)
  FrameEncoderStats stats;
  UniqueMuxContext out;
  bool finished = false;
  UniqueDemuxContext audio_src;
  std::vector<int> audio_map;  // source stream → output stream (-1: not copied)
  UniqueAVPacket audio_pkt;    // read, not yet written (its time is ahead of the video)
  UniqueAVCodecContext enc;
  AVStream* video = nullptr;
  FrameFormat format;          // the first frame's: every frame must match
  std::int64_t next_pts = 0;
  std::int64_t last_pts = AV_NOPTS_VALUE;
  UniqueSwsContext sws;
  UniqueAVFrame picture;       // the encoder's pixel format
  std::optional<Frame> host;   // device frames are downloaded here
};

FrameEncoder::Impl::Impl(FrameEncoderOptions options) : o(std::move(options)) {
  if (o.time_base.num <= 0 || o.time_base.den <= 0) o.time_base = av_inv_q(o.frame_rate);
  if (o.frame_rate.num <= 0 || o.frame_rate.den <= 0)
    throw input_error(fmt::format("{}: frame rate {}/{} is not positive", o.path, o.frame_rate.num,
                                  o.frame_rate.den));
  if (!o.audio_from.empty() && same_file(o.audio_from, o.path))
    throw usage_error(fmt::format("{}: the output is the audio source; vpipe never writes to its input",
                                  o.path));
  (void)check_container(o.path);
  check_writable(o.path, "output");
  encoder_options.output = o.path;
  encoder_options.encoder = o.encoder;
  encoder_options.crf = o.crf;
  encoder_options.preset = o.preset;
  encoder_options.qscale = o.qscale;
  if (!o.audio_from.empty()) audio_src = open_input(o.audio_from);
}

void FrameEncoder::Impl::open(const FrameFormat& f) {
  format = f;
  TranscodePlan plan;  // for choose_encoder's notes: the CPU encoders (no NVENC probe)
  const AVCodec* codec = choose_encoder(encoder_options, {}, plan);
  const FrameFormat want{encoder_format(codec, AV_PIX_FMT_YUV420P), f.width, f.height};
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(want.pix_fmt);
  const int mw = 1 << d->log2_chroma_w, mh = 1 << d->log2_chroma_h;
  if (f.width % mw || f.height % mh)
    throw input_error(fmt::format("{}: {} cannot encode {}x{} in {}: sizes must be multiples of {}x{} "
                                  "(crop or pad the frames)", o.path, codec->name, f.width, f.height,
                                  d->name, mw, mh));
  AVFormatContext* raw = nullptr;
  av_check(avformat_alloc_output_context2(&raw, nullptr, nullptr, o.path.c_str()), o.path);
  out.reset(raw);
  enc = open_video_encoder(codec, want, o.time_base, o.frame_rate,
                           (out->oformat->flags & AVFMT_GLOBALHEADER) != 0, encoder_options, nullptr);
  video = avformat_new_stream(out.get(), nullptr);
  av_check(avcodec_parameters_from_context(video->codecpar, enc.get()), "encoder parameters");
  video->time_base = enc->time_base;
  add_audio();
  if (!(out->oformat->flags & AVFMT_NOFILE))
    av_check(avio_open(&out->pb, o.path.c_str(), AVIO_FLAG_WRITE), o.path);
  av_check(avformat_write_header(out.get(), nullptr), o.path + ": writing the header");
  sws.reset(sws_getContext(f.width, f.height, f.pix_fmt, want.width, want.height, want.pix_fmt,
                           SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr, nullptr));
  if (!sws) throw input_error(fmt::format("{}: cannot convert {} to {}", o.path, to_string(f), to_string(want)));
  picture = make_av_frame();
  picture->format = want.pix_fmt;
  picture->width = want.width;
  picture->height = want.height;
  av_check(av_frame_get_buffer(picture.get(), 0), "encoder frame");
}

void FrameEncoder::Impl::add_audio() {
  if (!audio_src) return;
  audio_pkt = make_av_packet();
  audio_map.assign(audio_src->nb_streams, -1);
  for (unsigned i = 0; i < audio_src->nb_streams; ++i) {
    const AVStream* s = audio_src->streams[i];
    if (s->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
    if (container_holds(out->oformat, s->codecpar->codec_id) == false) {
      spdlog::warn("{}: audio stream #{} ({}) not copied: {} cannot hold it", o.path, i,
                   avcodec_get_name(s->codecpar->codec_id), out->oformat->name);
      continue;
    }
    AVStream* os = avformat_new_stream(out.get(), nullptr);
    av_check(avcodec_parameters_copy(os->codecpar, s->codecpar), "audio parameters");
    os->codecpar->codec_tag = 0;
    os->time_base = s->time_base;
    audio_map[i] = os->index;
  }
  audio_pkt->stream_index = -1;  // nothing read yet
}

void FrameEncoder::Impl::pump_audio(double until_s) {
  if (!audio_src) return;
  for (;;) {
    if (audio_pkt->stream_index < 0 && av_read_frame(audio_src.get(), audio_pkt.get()) < 0) {
      audio_src.reset();  // the end (or damage): nothing more to copy
      return;
    }
    const int index = audio_pkt->stream_index;
    const int target = index < static_cast<int>(audio_map.size()) ? audio_map[static_cast<std::size_t>(index)] : -1;
    if (target < 0) {
      av_packet_unref(audio_pkt.get());
      audio_pkt->stream_index = -1;
      continue;
    }
    const AVRational tb = audio_src->streams[index]->time_base;
    const std::int64_t ts = audio_pkt->dts != AV_NOPTS_VALUE ? audio_pkt->dts : audio_pkt->pts;
    if (ts != AV_NOPTS_VALUE && static_cast<double>(ts) * av_q2d(tb) > until_s) return;
    av_packet_rescale_ts(audio_pkt.get(), tb, out->streams[target]->time_base);
    audio_pkt->stream_index = target;
    audio_pkt->pos = -1;
    if (av_interleaved_write_frame(out.get(), audio_pkt.get()) == 0) stats.audio_packets++;
    av_packet_unref(audio_pkt.get());
    audio_pkt->stream_index = -1;
  }
}

void FrameEncoder::Impl::send(AVFrame* frame) {
  av_check(avcodec_send_frame(enc.get(), frame), o.path + ": encoding");
  UniqueAVPacket pkt = make_av_packet();
  for (;;) {
    const int ret = avcodec_receive_packet(enc.get(), pkt.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    av_check(ret, o.path + ": encoding");
    // The last packet's duration ends the video (an MP4's edit list); FFmpeg
    // 5's delaying encoders leave it 0: one frame's time.
    if (pkt->duration <= 0) pkt->duration = std::max<std::int64_t>(1, av_rescale_q(1, av_inv_q(o.frame_rate), enc->time_base));
    av_packet_rescale_ts(pkt.get(), enc->time_base, video->time_base);
    pkt->stream_index = video->index;
    if (pkt->dts != AV_NOPTS_VALUE) pump_audio(static_cast<double>(pkt->dts) * av_q2d(video->time_base));
    av_check(av_interleaved_write_frame(out.get(), pkt.get()), o.path + ": writing");
    stats.packets++;
  }
}

const Frame& FrameEncoder::Impl::on_host(const Frame& frame) {
  if (frame.ready) frame.ready->synchronize();
  if (frame.memory == MemoryKind::kHost) return frame;
  if (!host || host->format != frame.format) host = Frame::allocate_host(frame.format);
  for (int p = 0; p < frame.num_planes; ++p) {
    const auto& src = frame.planes[static_cast<std::size_t>(p)];
    const auto& dst = host->planes[static_cast<std::size_t>(p)];
    VPIPE_CUDA_TRY(cudaMemcpy2D(dst.data, dst.pitch, src.data, src.pitch, src.row_bytes(),
                                  static_cast<std::size_t>(src.height), cudaMemcpyDeviceToHost));
    stats.device_to_host_bytes += static_cast<std::int64_t>(src.row_bytes()) * src.height;
  }
  return *host;
}

FrameEncoder::FrameEncoder(FrameEncoderOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

FrameEncoder::~FrameEncoder() {
  try {
    close();
  } catch (const std::exception& e) {
    spdlog::error("{}: {}", impl_->o.path, e.what());
  }
}

void FrameEncoder::write(const Frame& frame, std::optional<std::int64_t> pts) {
  Impl& m = *impl_;
  if (m.finished) throw logic_error(m.o.path + ": write after close");
  if (!m.enc) m.open(frame.format);
  if (frame.format != m.format)
    throw input_error(fmt::format("{}: frame {} is {}, the video is {}; every frame must have the first "
                                  "one's size and format", m.o.path, m.stats.frames, to_string(frame.format),
                                  to_string(m.format)));
  const std::int64_t t = pts.value_or(m.next_pts);
  if (m.last_pts != AV_NOPTS_VALUE && t <= m.last_pts)
    throw input_error(fmt::format("{}: pts {} does not follow {}; timestamps must increase", m.o.path, t,
                                  m.last_pts));
  const Frame& src = m.on_host(frame);
  std::array<const std::uint8_t*, 4> data{};
  std::array<int, 4> linesize{};
  for (int p = 0; p < src.num_planes; ++p) {
    data[static_cast<std::size_t>(p)] = src.planes[static_cast<std::size_t>(p)].data;
    linesize[static_cast<std::size_t>(p)] = static_cast<int>(src.planes[static_cast<std::size_t>(p)].pitch);
  }
  av_check(av_frame_make_writable(m.picture.get()), "encoder frame");
  sws_scale(m.sws.get(), data.data(), linesize.data(), 0, src.format.height, m.picture->data,
            m.picture->linesize);
  m.picture->pts = av_rescale_q(t, m.o.time_base, m.enc->time_base);
  m.send(m.picture.get());
  m.last_pts = t;
  m.next_pts = t + std::max<std::int64_t>(1, av_rescale_q(1, av_inv_q(m.o.frame_rate), m.o.time_base));
  m.stats.frames++;
}

void FrameEncoder::close() {
  Impl& m = *impl_;
  if (std::exchange(m.finished, true) || !m.enc) return;
  m.send(nullptr);
  m.pump_audio(1e18);  // the rest of the audio
  av_check(av_write_trailer(m.out.get()), m.o.path + ": writing the trailer");
}

const FrameEncoderStats& FrameEncoder::stats() const { return impl_->stats; }
std::string FrameEncoder::encoder_name() const { return impl_->enc ? impl_->enc->codec->name : ""; }

}  // namespace vpipe
