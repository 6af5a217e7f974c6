// Opening the decoder and the video encoder from the options, the way every
// transcode, segment and the Python encoder do.
#pragma once

#include "vpipe/pipeline/io/hdr.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/graph/frame.hpp"
#include "vpipe/pipeline/session/transcode_options.hpp"

namespace vpipe {

class NvdecContext;
class HostFramePool;

// The decoder's thread count for `o`: its decode_threads when given (> 0); automatic (0) with
// NVDEC is kNvdecFrameThreads on a file (FFmpeg's frame threads parse the next frame while
// NVDEC decodes; FFmpeg adds a decode surface for each) and 1 on a live input (no frame of
// latency); automatic without NVDEC stays 0, FFmpeg's own choice.
inline constexpr int kNvdecFrameThreads = 2;
[[nodiscard]] int decoder_threads(const TranscodeOptions& o, bool nvdec);

// How FFmpeg drives NVDEC for a stream of `codec`: o.nvdec_api when it names one; auto is
// FFmpeg's cuvid decoder where FFmpeg has one for the codec and the run decodes several
// files at once with one decoder each (--streams > 1, --decode-sessions 1), else the hwaccel.
// Measured (RESULTS, "FFmpeg's two ways to NVDEC"): with 14 and 21 streams through the
// pipeline cuvid ran faster than the hwaccel on each clip measured; one stream ran the same.
[[nodiscard]] NvdecApi nvdec_api_for(const TranscodeOptions& o, AVCodecID codec);

// Opens `stream`'s decoder the way transcode() does (threads from `o`; NVDEC
// through `nvdec`, with `nvdec_frames_held` surfaces for the frames the caller holds, or
// host frames from `host_pool`). Errors name o.input.
[[nodiscard]] UniqueAVCodecContext open_decoder(AVStream* stream, const TranscodeOptions& o,
                                                NvdecContext* nvdec = nullptr,
                                                int nvdec_frames_held = 0,
                                                HostFramePool* host_pool = nullptr);

// A stream's field order says interlaced pictures (FFmpeg's TT, BB, TB or BT).
[[nodiscard]] bool is_interlaced(AVFieldOrder order);
// The encoder codes interlaced pictures of `format` as fields (interlaced DCT and motion),
// given AV_CODEC_FLAG_INTERLACED_DCT and _ME and each frame's field order: libx264 and
// mpeg2video, where each field has whole chroma rows (4:2:0: a height of 4n; libx264
// refuses others). Else each picture is coded as one frame, the field order a tag only.
[[nodiscard]] bool codes_fields(const AVCodec* codec, const FrameFormat& format);

// Whether an encoder opened and never given a frame can be closed. SVT-AV1 1.4 (Debian 12's
// libsvtav1) waits for ever in svt_av1_enc_deinit then, with an end of stream sent or not:
// a trial open of it (check_encoder_options) hung vpipe before the first frame.
[[nodiscard]] bool closes_without_frames(const AVCodec* codec);

// The encoder options of `o` (profile, level, rates, preset, encoder_option) tried on
// the encoder it names (libx264 for auto) before any input is opened: one it refuses, or
// a key it does not know, is a usage_error naming the options. Where the encoder will not
// open even without them (a size or rate only the input tells), nothing is said here.
void check_encoder_options(const TranscodeOptions& o);

// Opens a video encoder the way transcode() does (quality options from `o`,
// colour properties and field order from `props` when given (interlaced: coded as
// fields where codes_fields), the sample aspect ratio the
// frames have: {0, 1} for unknown; sample_aspect_after gives it for a chain),
// HDR10 metadata from `hdr10` into the bitstream where the encoder takes it (libx265).
[[nodiscard]] UniqueAVCodecContext open_video_encoder(
    const AVCodec* codec, const FrameFormat& format, AVRational time_base, AVRational frame_rate,
    bool global_header, const TranscodeOptions& o, const AVCodecContext* props,
    AVRational sample_aspect = {0, 1}, const Hdr10* hdr10 = nullptr);

}  // namespace vpipe
