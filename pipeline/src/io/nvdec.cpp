#include "vpipe/pipeline/io/nvdec.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <string_view>

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_cuda.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/base/errors.hpp"

namespace vpipe {

struct NvdecContext::Impl {
  UniqueAVBufferRef device;
  // The last frames context made, reused when the decoder is set up again
  // for the same picture: FFmpeg drops the decoder's reference before it asks
  // (hwaccel_uninit), and --loop's drain and flush at every start-over set the
  // decoder up again; a new pool each time held ~20 more surfaces per pass
  // (1.3 GB after 20 passes of a 1080p clip on the H200, naive).
  UniqueAVBufferRef frames;
  mutable std::mutex mu;
  std::string refusal;
};

struct NvdecCallbacks {
  struct Buffer {
    NvdecContext* owner;
    std::size_t bytes;
  };

  static void free_buffer(void* opaque, std::uint8_t* data) {
    auto* b = static_cast<Buffer*>(opaque);
    b->owner->mr_.deallocate(data, b->bytes, b->owner->stream_);
    b->owner->buffers_--;
    b->owner->bytes_ -= static_cast<std::int64_t>(b->bytes);
    delete b;
  }

  // The frames pool's allocator: one device buffer from the strategy.
  static AVBufferRef* alloc(void* opaque, std::size_t size) {
    auto* self = static_cast<NvdecContext*>(opaque);
    try {
      void* p = self->mr_.allocate(size, self->stream_);
      auto* b = new Buffer{self, size};
      AVBufferRef* ref = av_buffer_create(static_cast<std::uint8_t*>(p), size, &free_buffer, b, 0);
      if (!ref) {
        delete b;
        self->mr_.deallocate(p, size, self->stream_);
        return nullptr;
      }
      self->buffers_++;
      self->bytes_ += static_cast<std::int64_t>(size);
      return ref;
    } catch (const std::exception& e) {
      spdlog::error("NVDEC frame pool: {}", e.what());
      return nullptr;  // FFmpeg reports ENOMEM for the frame
    }
  }

  static AVPixelFormat refuse(NvdecContext* self, std::string why) {
    std::lock_guard lock(self->impl_->mu);
    self->impl_->refusal = std::move(why);
    return AV_PIX_FMT_NONE;
  }

  static bool offers_cuda(const AVPixelFormat* fmts) {
    for (const AVPixelFormat* p = fmts; *p != AV_PIX_FMT_NONE; ++p)
      if (*p == AV_PIX_FMT_CUDA) return true;
    return false;
  }

  // `ctx` decodes into the frames context kept from before where it matches `frames`
  // (size, formats, at least `surfaces`), else into `frames`, given the strategy's pool.
  static AVPixelFormat use_frames(AVCodecContext* ctx, NvdecContext* self, UniqueAVBufferRef frames,
                                  int surfaces) {
    auto* fc = reinterpret_cast<AVHWFramesContext*>(frames->data);
    if (self->impl_->frames) {  // the same picture again: the same pool
      const auto* have = reinterpret_cast<const AVHWFramesContext*>(self->impl_->frames->data);
      if (have->width == fc->width && have->height == fc->height &&
          have->sw_format == fc->sw_format && have->format == fc->format &&
          have->initial_pool_size >= surfaces) {
        av_buffer_unref(&ctx->hw_frames_ctx);
        ctx->hw_frames_ctx = av_buffer_ref(self->impl_->frames.get());
        return ctx->hw_frames_ctx ? AV_PIX_FMT_CUDA
                                  : refuse(self, "NVDEC frame pool: out of memory");
      }
    }
    if (fc->sw_format != AV_PIX_FMT_NV12 && fc->sw_format != AV_PIX_FMT_P010LE)
      return refuse(self, fmt::format("NVDEC would give {} frames; vpipe takes NV12 and P010",
                                      av_get_pix_fmt_name(fc->sw_format)));
    // FFmpeg lays planes out with the device's texture pitch alignment (≤ 512
    // on every NVIDIA GPU); size buffers for 1024 to be safe.
    const int size = av_image_get_buffer_size(fc->sw_format, fc->width, fc->height, 1024);
    if (size <= 0) return refuse(self, "NVDEC frame size");
    fc->pool = av_buffer_pool_init2(static_cast<std::size_t>(size), self, &alloc, nullptr);
    if (!fc->pool) return refuse(self, "NVDEC frame pool: out of memory");
    fc->initial_pool_size = surfaces;
    self->surfaces_ = surfaces;
    if (const int ret = av_hwframe_ctx_init(frames.get()); ret < 0)
      return refuse(self, fmt::format("NVDEC frame pool: {}", av_error_text(ret)));
    av_buffer_unref(&ctx->hw_frames_ctx);
    ctx->hw_frames_ctx = av_buffer_ref(frames.get());
    if (!ctx->hw_frames_ctx) return refuse(self, "NVDEC frame pool: out of memory");
    self->impl_->frames = std::move(frames);  // (the one before goes when its frames do)
    return AV_PIX_FMT_CUDA;
  }

  static AVPixelFormat get_format(AVCodecContext* ctx, const AVPixelFormat* fmts) {
    auto* self = static_cast<NvdecContext*>(ctx->opaque);
    if (!offers_cuda(fmts))
      return refuse(
          self, fmt::format("FFmpeg's NVDEC hwaccel does not take this {} stream ({}x{} {})",
                            avcodec_get_name(ctx->codec_id), ctx->coded_width, ctx->coded_height,
                            av_get_pix_fmt_name(ctx->sw_pix_fmt)));
    AVBufferRef* frames_ref = nullptr;
    if (const int ret = avcodec_get_hw_frames_parameters(ctx, self->impl_->device.get(),
                                                         AV_PIX_FMT_CUDA, &frames_ref);
        ret < 0)
      return refuse(self, fmt::format("NVDEC frame parameters: {}", av_error_text(ret)));
    UniqueAVBufferRef frames(frames_ref);
    constexpr int kNvdecMaxSurfaces = 32;
    const int pool = reinterpret_cast<AVHWFramesContext*>(frames->data)->initial_pool_size;
    return use_frames(ctx, self, std::move(frames),
                      std::min(kNvdecMaxSurfaces, pool + self->frames_held_));
  }

  // A cuvid decoder asks at open (its picture size from the container, NV12 for
  // now) and at each sequence header (the picture's own size and format), and
  // takes the frames context given then (cuviddec.c): each a pool of the strategy's
  // memory, another one where the picture changes. It copies each picture out of
  // NVDEC's surface into one of these frames and holds no surface itself.
  static AVPixelFormat get_format_cuvid(AVCodecContext* ctx, const AVPixelFormat* fmts) {
    auto* self = static_cast<NvdecContext*>(ctx->opaque);
    if (!offers_cuda(fmts))
      return refuse(self,
                    fmt::format("FFmpeg's {} decoder offers no CUDA frames", ctx->codec->name));
    if (ctx->width <= 0 || ctx->height <= 0) return AV_PIX_FMT_CUDA;  // no size yet: it asks again
    UniqueAVBufferRef frames(av_hwframe_ctx_alloc(self->impl_->device.get()));
    if (!frames) return refuse(self, "NVDEC frame pool: out of memory");
    auto* fc = reinterpret_cast<AVHWFramesContext*>(frames->data);
    fc->format = AV_PIX_FMT_CUDA;
    fc->sw_format = ctx->sw_pix_fmt;
    fc->width = ctx->width;
    fc->height = ctx->height;
    return use_frames(ctx, self, std::move(frames), 0);  // grows as frames are taken
  }
};

namespace {
// The context the CUDA runtime made current on this thread (its primary
// context), through the driver entry point the runtime hands out.
CUcontext runtime_context() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  VPIPE_CUDA_TRY(
      cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || !fn)
    throw std::runtime_error("the CUDA driver has no cuCtxGetCurrent");
  CUcontext ctx = nullptr;
  if (reinterpret_cast<CUresult (*)(CUcontext*)>(fn)(&ctx) != CUDA_SUCCESS || !ctx)
    throw std::runtime_error("no current CUDA context");
  return ctx;
}

// FFmpeg's CUDA device on the runtime's primary context, its copies on `stream`.
// FFmpeg's own primary-context path refuses a primary context the runtime
// already made with other scheduling flags; handing it the context (and a
// stream) is its documented alternative, and FFmpeg then leaves both alone.
UniqueAVBufferRef cuda_device(cudaStream_t stream) {
  UniqueAVBufferRef device(av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA));
  if (!device) throw std::bad_alloc();
  auto* hw =
      static_cast<AVCUDADeviceContext*>(reinterpret_cast<AVHWDeviceContext*>(device->data)->hwctx);
  hw->cuda_ctx = runtime_context();
  hw->stream = reinterpret_cast<CUstream>(stream);  // NVDEC's copies go on vpipe's stream
  av_check(av_hwdevice_ctx_init(device.get()), "creating FFmpeg's CUDA device for NVDEC");
  return device;
}
}  // namespace

void NvdecContext::StreamDestroy::operator()(cudaStream_t s) const noexcept {
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}

NvdecContext::NvdecContext(DeviceMemoryResource& mr, cudaStream_t stream)
    : impl_(std::make_unique<Impl>()), mr_(mr), stream_(stream) {
  VPIPE_CUDA_TRY(cudaFree(nullptr));  // the runtime's primary context is current from here
  impl_->device = cuda_device(stream);
}

// The kept frames context first, while the members its buffers' free
// callback uses (the resource, the counters) are alive.
NvdecContext::~NvdecContext() { impl_->frames.reset(); }

void NvdecContext::attach(AVCodecContext* decoder, int frames_held) {
  frames_held_ = frames_held;
  decoder->hw_device_ctx = av_buffer_ref(impl_->device.get());
  decoder->opaque = this;
  decoder->get_format = &NvdecCallbacks::get_format;
}

// FFmpeg's cuvid decoder maps each picture with no output_stream, so NVDEC's
// post-processing runs on the legacy default stream; it then copies the picture
// on the device's stream and unmaps it at once (cuviddec.c; its hwaccel, nvdec.c,
// maps on its own stream). On vpipe's non-blocking streams the copy could run
// before the post-processing was done, or after the next picture reused the
// output surface: a frame now and then came out wrong (HEVC 10-bit on an H100:
// docs/results/cuvid-race-h100-2026-12-05-d3c2ae5). A blocking stream is ordered
// with the legacy stream both ways.
void NvdecContext::attach_cuvid(AVCodecContext* decoder) {
  VPIPE_EXPECTS(!own_stream_, "attach_cuvid is called once");
  cudaStream_t s{};
  VPIPE_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamDefault));
  own_stream_.reset(s);
  impl_->device = cuda_device(s);
  stream_ = s;
  cuvid_ = true;
  decoder->hw_device_ctx = av_buffer_ref(impl_->device.get());
  decoder->opaque = this;
  decoder->get_format = &NvdecCallbacks::get_format_cuvid;
}

const AVCodec* cuvid_decoder(AVCodecID codec) {
  void* it = nullptr;
  while (const AVCodec* c = av_codec_iterate(&it))
    if (c->id == codec && av_codec_is_decoder(c) && c->wrapper_name &&
        std::string_view(c->wrapper_name) == "cuvid")
      return c;
  return nullptr;
}

std::string NvdecContext::refusal() const {
  std::lock_guard lock(impl_->mu);
  return impl_->refusal;
}

std::string nvdec_unsupported_reason(const AVCodecParameters* par) {
  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  if (!codec) return "no decoder";
  bool cuda = false;
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* c = avcodec_get_hw_config(codec, i);
    if (!c) break;
    if (c->device_type == AV_HWDEVICE_TYPE_CUDA &&
        (c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
      cuda = true;
  }
  if (!cuda) return fmt::format("FFmpeg has no NVDEC hwaccel for {}", codec->name);
  const auto pix = static_cast<AVPixelFormat>(par->format);
  // 10-bit 4:2:0 comes out of NVDEC as P010 (HEVC Main 10, VP9 profile 2, AV1);
  // NVDEC decodes no 10-bit H.264.
  const bool ten_bit = pix == AV_PIX_FMT_YUV420P10LE &&
                       (par->codec_id == AV_CODEC_ID_HEVC || par->codec_id == AV_CODEC_ID_VP9 ||
                        par->codec_id == AV_CODEC_ID_AV1);
  if (pix != AV_PIX_FMT_YUV420P && pix != AV_PIX_FMT_YUVJ420P && !ten_bit)
    return fmt::format(
        "the video is {}; NVDEC frames for vpipe's CUDA filters must be 4:2:0, 8-bit (or 10-bit "
        "HEVC, VP9, AV1)",
        pix == AV_PIX_FMT_NONE ? "of unknown format" : av_get_pix_fmt_name(pix));
  // FFmpeg's NVDEC copy (nvdec_retrieve_data) starts the chroma plane at row
  // `height` of the decoded surface, where NVDEC put it at the next even row:
  // on an odd height every chroma row comes out one row late, the first is
  // junk. Seen on the H200 with MPEG-2 at 720x405 and 720x407: chroma 30-31
  // dB against libavcodec with only `invert`, against 56-59 dB at 404 and 406
  // (docs/results/nvdec-odd-height-h200-2026-12-01). H.264 and HEVC 4:2:0
  // cannot have odd heights; MPEG-2, MPEG-4 Part 2 and VP9 can.
  if (par->height % 2 != 0)
    return fmt::format(
        "odd picture height ({} rows): FFmpeg's NVDEC copy misplaces the chroma "
        "plane by one row",
        par->height);
  // The smallest pictures NVDEC decodes (NVIDIA's NVDEC programming guide,
  // "Video decoder capabilities"): below them the hwaccel refuses the stream
  // at its first frame, too late for --decode auto to choose the CPU. Seen on
  // the H200 with a 2x2 H.264 clip (16x16 coded).
  const auto [min_w, min_h] = nvdec_min_size(par->codec_id);
  if (par->width < min_w || par->height < min_h)
    return fmt::format("{}x{} is below NVDEC's smallest {} picture ({}x{})", par->width,
                       par->height, codec->name, min_w, min_h);
  return {};
}

std::pair<int, int> nvdec_min_size(AVCodecID codec) {
  switch (codec) {
    case AV_CODEC_ID_HEVC:
      return {144, 144};
    case AV_CODEC_ID_VP9:
    case AV_CODEC_ID_AV1:
      return {128, 128};
    case AV_CODEC_ID_MJPEG:
      return {64, 64};
    default:
      return {48, 16};  // H.264, MPEG-1/2, MPEG-4 Part 2, VC-1, VP8
  }
}

}  // namespace vpipe
