#include "vpipe/pipeline/session/frame_encoder.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "vpipe/base/errors.hpp"
#include "vpipe/kernels/reference.hpp"
#include "vpipe/memory/strategy.hpp"
#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/io/audio_copy.hpp"
#include "vpipe/pipeline/io/containers.hpp"
#include "vpipe/pipeline/io/paths.hpp"
#include "vpipe/pipeline/io/protocols.hpp"
#include "vpipe/pipeline/io/run_files.hpp"
#include "vpipe/pipeline/session/transcode.hpp"
#include "vpipe/pipeline/session/transcode_plan.hpp"

namespace vpipe {

namespace {

// Device RGB frames become the encoder's YUV on the GPU, with the chain's own
// conversion (rgb_to_yuv): half the bytes cross PCIe and swscale does not run
// on the caller's thread. On the legacy default stream, which a DLPack
// producer synchronizes with (__dlpack__(stream=None)) and cudaMemcpy2D
// follows. Members in the order they must die, last first: the frame
// returns its memory to the strategy.
// A picture for the encoder, with its own buffers.
UniqueAVFrame make_picture(const FrameFormat& f) {
  UniqueAVFrame p = make_av_frame();
  p->format = f.pix_fmt;
  p->width = f.width;
  p->height = f.height;
  av_check(av_frame_get_buffer(p.get(), 0), "encoder frame");
  return p;
}

struct DeviceConversion {
  static cudaStream_t stream() { return cudaStreamLegacy; }
  MemoryStrategy memory = make_strategy("pool");
  std::vector<ConfiguredFilter> chain;
  std::optional<Frame> out;

  // The one CUDA step from `in` to `target`, or none (the host path converts).
  static std::unique_ptr<DeviceConversion> for_formats(const FrameFormat& in,
                                                       AVPixelFormat target) {
    const bool rgb = in.pix_fmt == AV_PIX_FMT_RGB24 || in.pix_fmt == AV_PIX_FMT_RGBA;
    if (!rgb || (target != AV_PIX_FMT_YUV420P && target != AV_PIX_FMT_NV12)) return nullptr;
    if (in.width % 2 || in.height % 2) return nullptr;  // 4:2:0 of an odd size: the host pads
    auto chain =
        build_chain(parse_chain(fmt::format("format={}", av_get_pix_fmt_name(target))), in);
    if (chain.size() != 1 || !chain[0].filter->has_cuda()) return nullptr;
    auto c = std::make_unique<DeviceConversion>();
    c->chain = std::move(chain);
    return c;
  }
  const Frame& convert(const Frame& in) {
    if (in.ready) in.ready->wait_on(stream());
    if (!out) out = Frame::allocate_device(chain[0].out, memory.resource(), stream());
    chain[0].filter->process_cuda(in, *out, {stream(), memory.resource()});
    return *out;
  }
};

// Encodes on its own thread while the caller prepares the next frame: the
// caller takes a free picture, fills it and gives it back; at most
// `pictures` are in flight. An error on the worker is rethrown by the next
// take() or by finish(). The thread is the last member: it goes first.
class EncodeWorker {
 public:
  EncodeWorker(std::function<void(AVFrame*)> encode, std::vector<UniqueAVFrame> pictures)
      : encode_(std::move(encode)), owned_(std::move(pictures)) {
    for (auto& p : owned_) free_.push_back(p.get());
    thread_ = std::thread([this] { run(); });
  }
  ~EncodeWorker() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  EncodeWorker(const EncodeWorker&) = delete;
  EncodeWorker& operator=(const EncodeWorker&) = delete;

  AVFrame* take() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return !free_.empty() || error_; });
    if (error_) std::rethrow_exception(error_);
    AVFrame* p = free_.front();
    free_.pop_front();
    return p;
  }
  void put_back(AVFrame* picture) {  // taken, not filled (the caller failed)
    {
      std::lock_guard lock(m_);
      free_.push_back(picture);
    }
    cv_.notify_all();
  }
  void give(AVFrame* picture) {
    {
      std::lock_guard lock(m_);
      todo_.push_back(picture);
    }
    cv_.notify_all();
  }
  // Every picture given is encoded (or the worker failed: rethrown).
  void finish() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return (todo_.empty() && !busy_) || error_; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run() {
    std::unique_lock lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return !todo_.empty() || stop_; });
      if (todo_.empty()) return;  // stopping, nothing left
      AVFrame* p = todo_.front();
      todo_.pop_front();
      busy_ = true;
      lock.unlock();
      std::exception_ptr failed;
      try {
        encode_(p);
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      free_.push_back(p);
      if (failed && !error_) error_ = failed;
      cv_.notify_all();
    }
  }
  std::function<void(AVFrame*)> encode_;
  std::vector<UniqueAVFrame> owned_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<AVFrame*> free_, todo_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

// Members in the order they must die, last first: the worker stops first
// (it encodes into the muxer); the staging frames and the converter hold
// nothing of the others; the encoder is drained into the muxer by close()
// before anything goes; the audio source only feeds the muxer.
struct FrameEncoder::Impl {
  explicit Impl(FrameEncoderOptions options);
  void open(const FrameFormat& format);
  void send(AVFrame* frame);  // null: flush
  [[nodiscard]] const Frame& on_host(const Frame& frame);
  // A device frame already in the encoder's format: downloaded straight into `picture`.
  bool download_into_picture(const Frame& frame);
  void open_conversion(const FrameFormat& want, const FrameFormat& aligned);
  void convert_on_host(const Frame& frame);            // swscale into `picture` (padded first)
  [[nodiscard]] const Frame& pad(const Frame& frame);  // into `padded`, edges repeated

  FrameEncoderOptions o;
  TranscodeOptions encoder_options;  // what open_video_encoder reads (quality, path)
  FrameEncoderStats stats;
  MuxerFiles files;                  // the files the muxer opens itself (HLS, DASH segments)
  std::optional<StagedOutput> file;  // written beside the path, put in place by close()
  UniqueMuxContext out;              // closes the file before `file` removes an unfinished one
  bool finished = false;
  UniqueDemuxContext audio_src;    // opened first (a bad name fails at once), then copied by
  std::optional<AudioCopy> audio;  // this, into `out`, before the muxer closes
  UniqueAVCodecContext enc;
  AVStream* video = nullptr;
  FrameFormat format;  // the first frame's: every frame must match
  std::int64_t next_pts = 0;
  std::int64_t last_pts = AV_NOPTS_VALUE;
  UniqueSwsContext sws;
  AVFrame* picture = nullptr;  // the one being filled (the encoder's pixel format), from the worker
  std::optional<Frame> host;   // device frames are downloaded here
  std::optional<Frame> padded;  // sizes rounded up to whole chroma samples, edges repeated
  UniqueAVFrame staging;        // converted at that size, when the encoder keeps an odd one
  std::unique_ptr<DeviceConversion> gpu;  // device RGB → the encoder's YUV
  bool gpu_checked = false;
  std::unique_ptr<EncodeWorker> worker;
};

FrameEncoder::Impl::Impl(FrameEncoderOptions options) : o(std::move(options)) {
  if (o.time_base.num <= 0 || o.time_base.den <= 0) o.time_base = av_inv_q(o.frame_rate);
  if (o.frame_rate.num <= 0 || o.frame_rate.den <= 0)
    throw input_error(fmt::format("{}: frame rate {}/{} is not positive", o.path, o.frame_rate.num,
                                  o.frame_rate.den));
  RunFiles run_files;  // the one check every front end makes (protocols, identity)
  run_files.reads(o.audio_from, "audio_from");
  run_files.writes(o.path, "output");
  run_files.check();
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
  // A size the encoder cannot take (odd, for most 4:2:0 encoders) is padded, as
  // the CLI's --fit pad does: the right column and bottom row repeated (pad()).
  FrameFormat want{encoder_format(codec, AV_PIX_FMT_YUV420P), f.width, f.height};
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(want.pix_fmt);
  const int mw = 1 << d->log2_chroma_w, mh = 1 << d->log2_chroma_h;
  const FrameFormat aligned{want.pix_fmt, (f.width + mw - 1) / mw * mw,
                            (f.height + mh - 1) / mh * mh};
  if (aligned != want && !encoder_takes_size(codec, want)) {
    want = aligned;
    spdlog::info("{}: {}x{} padded to {}x{} ({} takes {} in multiples of {}x{})", o.path, f.width,
                 f.height, want.width, want.height, codec->name, d->name, mw, mh);
  }
  AVFormatContext* raw = nullptr;
  av_check(avformat_alloc_output_context2(&raw, nullptr, nullptr, o.path.c_str()), o.path);
  out.reset(raw);
  files.attach(out.get());
  // RGB in: the output names the matrix it is converted with (BT.601, swscale's and
  // rgb_to_yuv's; limited range, but full into a JPEG format such as MJPEG's yuvj420p), or a
  // player reads an untagged HD picture as BT.709.
  UniqueAVCodecContext tags(avcodec_alloc_context3(nullptr));
  if (!tags) throw std::bad_alloc();
  if (is_rgb(f.pix_fmt) || is_rgb(want.pix_fmt)) {
    ColorSpec made = kUntaggedColour;
    if (is_jpeg_range(want.pix_fmt)) made.range = ColorRange::kFull;
    tags_of_colour(made, want.pix_fmt).apply(tags.get());
  }
  enc = open_video_encoder(codec, want, o.time_base, o.frame_rate,
                           (out->oformat->flags & AVFMT_GLOBALHEADER) != 0, encoder_options,
                           tags.get());
  video = avformat_new_stream(out.get(), nullptr);
  av_check(avcodec_parameters_from_context(video->codecpar, enc.get()), "encoder parameters");
  video->time_base = enc->time_base;
  if (audio_src) audio.emplace(std::move(audio_src), out.get(), o.path);
  if (!(out->oformat->flags & AVFMT_NOFILE)) {
    file.emplace(o.path, false);
    AVDictionary* opts = nullptr;  // the allowed protocols only (protocols.hpp)
    set_open_options(&opts, file->write_url(), false);
    const int ret =
        avio_open2(&out->pb, file->write_url().c_str(), AVIO_FLAG_WRITE, nullptr, &opts);
    av_dict_free(&opts);
    av_check(ret, o.path);
    file->opened();
  }
  av_check(avformat_write_header(out.get(), nullptr), o.path + ": writing the header");
  open_conversion(want, aligned);
  std::vector<UniqueAVFrame> pictures;
  for (int i = 0; i < 3; ++i)  // one filled by the caller, one encoding, one waiting
    pictures.push_back(make_picture(want));
  worker = std::make_unique<EncodeWorker>([this](AVFrame* p) { send(p); }, std::move(pictures));
}

// swscale gets the last chroma samples of an odd size wrong (seen: the corner
// of a 65x63 4:2:0 picture off by up to 26 levels, varying run to run). So it
// converts whole chroma samples only: at the size rounded up to them, from
// a copy of the frames with their edges repeated, into a staging picture when
// the encoder keeps the odd size.
void FrameEncoder::Impl::open_conversion(const FrameFormat& want, const FrameFormat& aligned) {
  if (aligned.width != format.width || aligned.height != format.height)
    padded = Frame::allocate_host({format.pix_fmt, aligned.width, aligned.height});
  if (aligned != want) staging = make_picture(aligned);
  sws = sited_sws({format.pix_fmt, aligned.width, aligned.height}, aligned,
                  SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, kUntaggedColour.siting);
  if (!sws)
    throw input_error(
        fmt::format("{}: cannot convert {} to {}", o.path, to_string(format), to_string(want)));
}

void FrameEncoder::Impl::send(AVFrame* frame) {
  av_check(send_video_frame(enc.get(), frame), o.path + ": encoding");
  UniqueAVPacket pkt = make_av_packet();
  for (;;) {
    const int ret = avcodec_receive_packet(enc.get(), pkt.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    av_check(ret, o.path + ": encoding");
    // The last packet's duration ends the video (an MP4's edit list); FFmpeg
    // 5's delaying encoders leave it 0: one frame's time.
    if (pkt->duration <= 0)
      pkt->duration =
          std::max<std::int64_t>(1, av_rescale_q(1, av_inv_q(o.frame_rate), enc->time_base));
    av_packet_rescale_ts(pkt.get(), enc->time_base, video->time_base);
    pkt->stream_index = video->index;
    if (audio && pkt->dts != AV_NOPTS_VALUE) {
      audio->pump(static_cast<double>(pkt->dts) * av_q2d(video->time_base));
      stats.audio_packets = audio->packets();
    }
    av_check(av_interleaved_write_frame(out.get(), pkt.get()), o.path + ": writing");
    files.check();
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

void FrameEncoder::Impl::convert_on_host(const Frame& frame) {
  const Frame& src = padded ? pad(frame) : frame;
  AVFrame* into = staging ? staging.get() : picture;
  std::array<const std::uint8_t*, 4> data{};
  std::array<int, 4> linesize{};
  for (int p = 0; p < src.num_planes; ++p) {
    data[static_cast<std::size_t>(p)] = src.planes[static_cast<std::size_t>(p)].data;
    linesize[static_cast<std::size_t>(p)] =
        static_cast<int>(src.planes[static_cast<std::size_t>(p)].pitch);
  }
  sws_scale(sws.get(), data.data(), linesize.data(), 0, src.format.height, into->data,
            into->linesize);
  if (staging)  // the encoder's odd size: its whole chroma samples are the aligned ones
    av_image_copy(picture->data, picture->linesize, const_cast<const std::uint8_t**>(into->data),
                  into->linesize, static_cast<AVPixelFormat>(picture->format), picture->width,
                  picture->height);
}

const Frame& FrameEncoder::Impl::pad(const Frame& frame) {
  for (int p = 0; p < frame.num_planes; ++p)
    ref::pad_plane(frame.planes[static_cast<std::size_t>(p)],
                   padded->planes[static_cast<std::size_t>(p)]);
  return *padded;
}

bool FrameEncoder::Impl::download_into_picture(const Frame& frame) {
  if (frame.memory != MemoryKind::kDevice || frame.format.pix_fmt != enc->pix_fmt || padded)
    return false;
  if (frame.ready) frame.ready->synchronize();
  for (int p = 0; p < frame.num_planes; ++p) {
    const auto& src = frame.planes[static_cast<std::size_t>(p)];
    VPIPE_CUDA_TRY(cudaMemcpy2D(picture->data[p], static_cast<std::size_t>(picture->linesize[p]),
                                src.data, src.pitch, src.row_bytes(),
                                static_cast<std::size_t>(src.height), cudaMemcpyDeviceToHost));
    stats.device_to_host_bytes += static_cast<std::int64_t>(src.row_bytes()) * src.height;
  }
  return true;
}

FrameEncoder::FrameEncoder(FrameEncoderOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

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
  if (!m.worker) {  // the first frame opens the encoder; one that fails leaves nothing open
    try {
      m.open(frame.format);
    } catch (...) {
      m.worker.reset();
      m.out.reset();   // closes the file…
      m.file.reset();  // …before its unfinished temporary is removed
      m.enc.reset();
      m.video = nullptr;
      throw;
    }
  }
  if (frame.format != m.format)
    throw input_error(
        fmt::format("{}: frame {} is {}, the video is {}; every frame must have the first "
                    "one's size and format",
                    m.o.path, m.stats.frames, to_string(frame.format), to_string(m.format)));
  const std::int64_t t = pts.value_or(m.next_pts);
  if (m.last_pts != AV_NOPTS_VALUE && t <= m.last_pts)
    throw input_error(fmt::format("{}: pts {} does not follow {}; timestamps must increase",
                                  m.o.path, t, m.last_pts));
  if (frame.memory == MemoryKind::kDevice && !std::exchange(m.gpu_checked, true))
    m.gpu = DeviceConversion::for_formats(frame.format, m.enc->pix_fmt);
  const Frame& ready = m.gpu && frame.memory == MemoryKind::kDevice ? m.gpu->convert(frame) : frame;
  m.picture = m.worker->take();
  try {
    // An encoder may still hold a reference to the buffer after it returned
    // the picture (FFmpeg's own encoders keep input pictures for reordering):
    // then a fresh buffer, never an overwrite of what it will still read.
    av_check(av_frame_make_writable(m.picture), "encoder frame");
    if (!m.download_into_picture(ready)) m.convert_on_host(m.on_host(ready));
  } catch (...) {
    m.worker->put_back(std::exchange(m.picture, nullptr));
    throw;
  }
  m.picture->pts = av_rescale_q(t, m.o.time_base, m.enc->time_base);
  m.worker->give(std::exchange(m.picture, nullptr));
  m.last_pts = t;
  m.next_pts =
      t + std::max<std::int64_t>(1, av_rescale_q(1, av_inv_q(m.o.frame_rate), m.o.time_base));
  m.stats.frames++;
}

void FrameEncoder::close() {
  Impl& m = *impl_;
  // Never opened, or its open failed (a header the muxer refused): nothing to finish.
  if (std::exchange(m.finished, true) || !m.worker) return;
  m.worker->finish();
  m.worker.reset();
  m.send(nullptr);
  if (m.audio) {
    m.audio->pump(1e18);  // the rest of the audio
    m.stats.audio_packets = m.audio->packets();
  }
  av_check(av_write_trailer(m.out.get()), m.o.path + ": writing the trailer");
  m.files.check();
  if (!(m.out->oformat->flags & AVFMT_NOFILE))
    av_check(avio_closep(&m.out->pb), m.o.path + ": writing");
  m.out.reset();
  if (m.file) m.file->commit();
}

const FrameEncoderStats& FrameEncoder::stats() const { return impl_->stats; }
std::string FrameEncoder::encoder_name() const { return impl_->enc ? impl_->enc->codec->name : ""; }

}  // namespace vpipe
