// The raw probe through NVCUVID (issue #45): per session NVIDIA's own parser
// and a hardware decoder, fed Annex B packets from memory; every picture is
// decoded, mapped and unmapped, as a consumer would take it, and nothing else
// runs. FFmpeg's NVDEC hwaccel (decode_probe.cpp) parses on the CPU and keeps
// its own surface pool; this is the ceiling it is measured against. The
// driver's libraries are loaded at run time through the ffnvcodec headers
// (Debian's libffmpeg-nvenc-dev), as FFmpeg loads them.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

extern "C" {
#include <libavcodec/bsf.h>
}

#include "decode_probe.hpp"
#include "probe_sessions.hpp"

#if __has_include(<ffnvcodec/dynlink_loader.h>)
#define VPIPE_HAVE_FFNVCODEC 1
#include <ffnvcodec/dynlink_loader.h>
#endif

namespace vpipe {

#ifndef VPIPE_HAVE_FFNVCODEC

DecodeProbeResult probe_decode_nvcuvid(const DecodeProbeOptions&) {
  throw cuda_error(cudaErrorNotSupported,
                   "vpipe was built without the ffnvcodec headers (apt-get install "
                   "libffmpeg-nvenc-dev, then rebuild): no raw NVCUVID probe");
}

#else

namespace {

// The driver's CUDA and NVCUVID entry points, loaded once per probe.
class CuvidLibrary {
 public:
  CuvidLibrary() {
    if (cuda_load_functions(&cu_, nullptr) < 0 || cuvid_load_functions(&cv_, nullptr) < 0)
      throw cuda_error(cudaErrorNotSupported,
                       "the driver's libcuda.so.1 or libnvcuvid.so.1 could not be loaded");
  }
  ~CuvidLibrary() {
    cuvid_free_functions(&cv_);
    cuda_free_functions(&cu_);
  }
  CuvidLibrary(const CuvidLibrary&) = delete;
  CuvidLibrary& operator=(const CuvidLibrary&) = delete;
  [[nodiscard]] const CudaFunctions& cu() const { return *cu_; }
  [[nodiscard]] const CuvidFunctions& cv() const { return *cv_; }

 private:
  CudaFunctions* cu_ = nullptr;
  CuvidFunctions* cv_ = nullptr;
};

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw cuda_error(cudaErrorUnknown,
                     fmt::format("{} failed (CUresult {})", what, static_cast<int>(r)));
}

// The device's primary context, retained for the probe's life.
class PrimaryContext {
 public:
  PrimaryContext(const CuvidLibrary& lib, int ordinal) : lib_(lib) {
    check(lib.cu().cuInit(0), "cuInit");
    check(lib.cu().cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    check(lib.cu().cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  }
  ~PrimaryContext() { (void)lib_.cu().cuDevicePrimaryCtxRelease(device_); }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  [[nodiscard]] CUcontext get() const { return context_; }

 private:
  const CuvidLibrary& lib_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

std::optional<cudaVideoCodec> cuvid_codec(AVCodecID id) {
  switch (id) {
    case AV_CODEC_ID_H264:
      return cudaVideoCodec_H264;
    case AV_CODEC_ID_HEVC:
      return cudaVideoCodec_HEVC;
    case AV_CODEC_ID_MPEG2VIDEO:
      return cudaVideoCodec_MPEG2;
    default:
      return std::nullopt;
  }
}

cudaVideoSurfaceFormat surface_format(const CUVIDEOFORMAT& f) {
  const bool deep = f.bit_depth_luma_minus8 > 0;
  if (f.chroma_format == cudaVideoChromaFormat_444)
    return deep ? cudaVideoSurfaceFormat_YUV444_16Bit : cudaVideoSurfaceFormat_YUV444;
  return deep ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
}

// One session: a parser, the decoder its first sequence header makes, and a
// context lock; every displayed picture is mapped, counted and unmapped.
// Runs on one thread, with the context current.
class RawSession {
 public:
  RawSession(const CuvidLibrary& lib, CUcontext context, cudaVideoCodec codec,
             probe::SessionRun& run)
      : lib_(lib), run_(run) {
    check(lib.cv().cuvidCtxLockCreate(&lock_, context), "cuvidCtxLockCreate");
    CUVIDPARSERPARAMS p{};
    p.CodecType = codec;
    p.ulMaxNumDecodeSurfaces = 1;  // the sequence callback returns the real count
    p.ulMaxDisplayDelay = 2;       // decode runs ahead of display, as NVIDIA's samples do
    p.pUserData = this;
    p.pfnSequenceCallback = &RawSession::on_sequence;
    p.pfnDecodePicture = &RawSession::on_decode;
    p.pfnDisplayPicture = &RawSession::on_display;
    check(lib.cv().cuvidCreateVideoParser(&parser_, &p), "cuvidCreateVideoParser");
  }
  ~RawSession() {  // the parser first (it calls into the decoder), the lock last
    if (parser_) (void)lib_.cv().cuvidDestroyVideoParser(parser_);
    if (decoder_) (void)lib_.cv().cuvidDestroyDecoder(decoder_);
    if (lock_) (void)lib_.cv().cuvidCtxLockDestroy(lock_);
  }
  RawSession(const RawSession&) = delete;
  RawSession& operator=(const RawSession&) = delete;

  void send(const AVPacket* pkt) {  // nullptr: the end of the stream
    CUVIDSOURCEDATAPACKET d{};
    if (pkt) {
      d.payload = pkt->data;
      d.payload_size = static_cast<unsigned long>(pkt->size);
      d.flags = CUVID_PKT_TIMESTAMP;
      d.timestamp = pkt->pts == AV_NOPTS_VALUE ? 0 : pkt->pts;
    } else {
      d.flags = CUVID_PKT_ENDOFSTREAM;
    }
    if (lib_.cv().cuvidParseVideoData(parser_, &d) != CUDA_SUCCESS) ++run_.errors;
    if (!failure_.empty()) throw std::runtime_error(failure_);
  }

 private:
  static int CUDAAPI on_sequence(void* self, CUVIDEOFORMAT* f) {
    return static_cast<RawSession*>(self)->sequence(*f);
  }
  static int CUDAAPI on_decode(void* self, CUVIDPICPARAMS* pic) {
    auto* s = static_cast<RawSession*>(self);
    if (s->lib_.cv().cuvidDecodePicture(s->decoder_, pic) != CUDA_SUCCESS) ++s->run_.errors;
    return 1;
  }
  static int CUDAAPI on_display(void* self, CUVIDPARSERDISPINFO* d) {
    if (d) static_cast<RawSession*>(self)->display(*d);
    return 1;
  }
  int sequence(const CUVIDEOFORMAT& f);
  void display(const CUVIDPARSERDISPINFO& d);

  const CuvidLibrary& lib_;
  probe::SessionRun& run_;
  std::string failure_;  // set in a callback, thrown by send()
  CUvideoctxlock lock_ = nullptr;
  CUvideodecoder decoder_ = nullptr;
  unsigned width_ = 0, height_ = 0;
  CUvideoparser parser_ = nullptr;
};

// The first sequence header makes the decoder; a later one of the same size
// keeps it (a loop starting over); another size is refused (not a probe's input).
int RawSession::sequence(const CUVIDEOFORMAT& f) {
  const int surfaces = std::max<int>(f.min_num_decode_surfaces, 8);
  if (decoder_) {
    if (f.coded_width == width_ && f.coded_height == height_) return surfaces;
    failure_ = fmt::format("the size changes mid-stream ({}x{} → {}x{})", width_, height_,
                           f.coded_width, f.coded_height);
    return 0;
  }
  CUVIDDECODECAPS caps{};
  caps.eCodecType = f.codec;
  caps.eChromaFormat = f.chroma_format;
  caps.nBitDepthMinus8 = f.bit_depth_luma_minus8;
  if (lib_.cv().cuvidGetDecoderCaps && lib_.cv().cuvidGetDecoderCaps(&caps) == CUDA_SUCCESS &&
      (!caps.bIsSupported || f.coded_width > caps.nMaxWidth || f.coded_height > caps.nMaxHeight)) {
    failure_ = fmt::format("this GPU's NVDEC does not decode it ({}x{}, {}-bit)", f.coded_width,
                           f.coded_height, 8 + f.bit_depth_luma_minus8);
    return 0;
  }
  CUVIDDECODECREATEINFO c{};
  c.CodecType = f.codec;
  c.ChromaFormat = f.chroma_format;
  c.OutputFormat = surface_format(f);
  c.bitDepthMinus8 = f.bit_depth_luma_minus8;
  c.DeinterlaceMode =
      f.progressive_sequence ? cudaVideoDeinterlaceMode_Weave : cudaVideoDeinterlaceMode_Adaptive;
  c.ulNumOutputSurfaces = 2;
  c.ulCreationFlags = cudaVideoCreate_PreferCUVID;
  c.ulNumDecodeSurfaces = static_cast<unsigned>(surfaces);
  c.vidLock = lock_;
  c.ulWidth = c.ulMaxWidth = f.coded_width;
  c.ulHeight = c.ulMaxHeight = f.coded_height;
  c.display_area = {static_cast<short>(f.display_area.left), static_cast<short>(f.display_area.top),
                    static_cast<short>(f.display_area.right),
                    static_cast<short>(f.display_area.bottom)};
  c.ulTargetWidth = static_cast<unsigned>(f.display_area.right - f.display_area.left);
  c.ulTargetHeight = static_cast<unsigned>(f.display_area.bottom - f.display_area.top);
  if (const CUresult r = lib_.cv().cuvidCreateDecoder(&decoder_, &c); r != CUDA_SUCCESS) {
    failure_ = fmt::format("cuvidCreateDecoder failed (CUresult {})", static_cast<int>(r));
    return 0;
  }
  width_ = f.coded_width;
  height_ = f.coded_height;
  return surfaces;
}

void RawSession::display(const CUVIDPARSERDISPINFO& d) {
  CUVIDPROCPARAMS p{};
  p.progressive_frame = d.progressive_frame;
  p.top_field_first = d.top_field_first;
  p.unpaired_field = d.repeat_first_field < 0;
  unsigned long long frame = 0;
  unsigned pitch = 0;
  if (lib_.cv().cuvidMapVideoFrame(decoder_, d.picture_index, &frame, &pitch, &p) != CUDA_SUCCESS) {
    ++run_.errors;
    return;
  }
  (void)lib_.cv().cuvidUnmapVideoFrame(decoder_, frame);
  run_.count_frame();
}

// Annex B packets (the parser's input): MP4 and Matroska hold length-prefixed
// NAL units, turned by FFmpeg's own bitstream filter.
std::vector<UniqueAVPacket> annex_b(const std::string& path, probe::VideoPackets& in) {
  const AVCodecParameters* par = in.video->codecpar;
  const bool length_prefixed = par->extradata_size > 0 && par->extradata[0] == 1;
  const char* name = par->codec_id == AV_CODEC_ID_H264   ? "h264_mp4toannexb"
                     : par->codec_id == AV_CODEC_ID_HEVC ? "hevc_mp4toannexb"
                                                         : nullptr;
  if (!length_prefixed || !name) return std::move(in.packets);
  AVBSFContext* raw = nullptr;
  if (av_bsf_alloc(av_bsf_get_by_name(name), &raw) < 0) throw std::bad_alloc();
  const std::unique_ptr<AVBSFContext, void (*)(AVBSFContext*)> bsf(
      raw, [](AVBSFContext* b) { av_bsf_free(&b); });
  avcodec_parameters_copy(bsf->par_in, par);
  bsf->time_base_in = in.video->time_base;
  if (av_bsf_init(bsf.get()) < 0) throw input_error(fmt::format("{}: {} refused it", path, name));
  std::vector<UniqueAVPacket> out;
  for (auto& p : in.packets) {
    if (av_bsf_send_packet(bsf.get(), p.get()) < 0) continue;  // damaged: the probe skips it
    for (UniqueAVPacket q = make_av_packet(); av_bsf_receive_packet(bsf.get(), q.get()) == 0;
         q = make_av_packet())
      out.push_back(std::move(q));
  }
  return out;
}

}  // namespace

DecodeProbeResult probe_decode_nvcuvid(const DecodeProbeOptions& options) {
  probe::VideoPackets in = probe::read_video_packets(options.input);
  const auto codec = cuvid_codec(in.video->codecpar->codec_id);
  if (!codec)
    throw input_error(
        fmt::format("{}: the raw NVCUVID probe decodes H.264, HEVC and MPEG-2, not {}",
                    options.input, avcodec_get_name(in.video->codecpar->codec_id)));
  const std::vector<UniqueAVPacket> packets = annex_b(options.input, in);
  int device = 0;
  VPIPE_CUDA_TRY(cudaGetDevice(&device));
  const CuvidLibrary lib;
  const PrimaryContext context(lib, device);
  return probe::run_together(options.input, static_cast<std::size_t>(std::max(1, options.sessions)),
                             device, [&](std::size_t, probe::SessionRun& run) {
                               check(lib.cu().cuCtxPushCurrent(context.get()), "cuCtxPushCurrent");
                               {
                                 RawSession s(lib, context.get(), *codec, run);
                                 for (int l = 0; l < std::max(1, options.loop); ++l)
                                   for (const auto& p : packets) s.send(p.get());
                                 s.send(nullptr);
                               }
                               CUcontext popped = nullptr;
                               (void)lib.cu().cuCtxPopCurrent(&popped);
                             });
}

#endif

}  // namespace vpipe
