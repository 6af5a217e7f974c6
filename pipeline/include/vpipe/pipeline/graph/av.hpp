// RAII for FFmpeg handles (torchcodec's FFMPEGCommon.h way): a deleter over
// each free function, distinct types for demux and mux contexts since they are
// freed differently, and ffmpeg_error carrying the AVERROR code.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vpipe/base/errors.hpp"

namespace vpipe {

// "Invalid data found when processing input" for AVERROR_INVALIDDATA.
[[nodiscard]] std::string av_error_text(int averror);

// Throws ffmpeg_error("<what>: <av_error_text>") when ret < 0; returns ret.
int av_check(int ret, std::string_view what);

// Sends `frame` (null: flush) to a video encoder. An encoder with a fixed quantizer
// (AV_CODEC_FLAG_QSCALE) reads it from each frame's quality, not the context's: set here from
// global_quality, as FFmpeg's CLI does (unset, MPEG-4 coded every frame at q 2).
[[nodiscard]] int send_video_frame(AVCodecContext* enc, AVFrame* frame);

// While one lives, FFmpeg logs nothing (a trial open: its banner and refusals are not the
// user's news); the level before comes back when it dies.
class QuietFfmpegLog {
 public:
  QuietFfmpegLog() : level_(av_log_get_level()) { av_log_set_level(AV_LOG_QUIET); }
  ~QuietFfmpegLog() { av_log_set_level(level_); }
  QuietFfmpegLog(const QuietFfmpegLog&) = delete;
  QuietFfmpegLog& operator=(const QuietFfmpegLog&) = delete;

 private:
  int level_;
};

// While one lives, FFmpeg's error messages (from any thread) are also kept, so
// a call that fails with a bare "Invalid argument" can say why, in FFmpeg's
// words ("mxf: Unsupported frame rate…"). One at a time: a second waits.
class FfmpegErrors {
 public:
  FfmpegErrors();
  ~FfmpegErrors();
  FfmpegErrors(const FfmpegErrors&) = delete;
  FfmpegErrors& operator=(const FfmpegErrors&) = delete;
  // " (why: …)" from the first messages kept, or empty when none came.
  [[nodiscard]] std::string why() const;
  // The options a codec warned it did not take and went on without ("Unknown option:
  // bogus."), or empty.
  [[nodiscard]] std::string ignored() const;
};

namespace detail {
struct FrameDeleter {
  void operator()(AVFrame* f) const noexcept { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const noexcept { av_packet_free(&p); }
};
struct CodecContextDeleter {
  void operator()(AVCodecContext* c) const noexcept { avcodec_free_context(&c); }
};
struct DemuxContextDeleter {
  void operator()(AVFormatContext* c) const noexcept { avformat_close_input(&c); }
};
struct MuxContextDeleter {
  void operator()(AVFormatContext* c) const noexcept {
    if (c && !(c->oformat->flags & AVFMT_NOFILE)) avio_closep(&c->pb);
    avformat_free_context(c);
  }
};
struct SwsDeleter {
  void operator()(SwsContext* c) const noexcept { sws_freeContext(c); }
};
struct CodecParametersDeleter {
  void operator()(AVCodecParameters* p) const noexcept { avcodec_parameters_free(&p); }
};
struct BufferRefDeleter {
  void operator()(AVBufferRef* b) const noexcept { av_buffer_unref(&b); }
};
}  // namespace detail

using UniqueAVFrame = std::unique_ptr<AVFrame, detail::FrameDeleter>;
using UniqueAVPacket = std::unique_ptr<AVPacket, detail::PacketDeleter>;
using UniqueAVCodecContext = std::unique_ptr<AVCodecContext, detail::CodecContextDeleter>;
using UniqueDemuxContext = std::unique_ptr<AVFormatContext, detail::DemuxContextDeleter>;
using UniqueMuxContext = std::unique_ptr<AVFormatContext, detail::MuxContextDeleter>;
using UniqueSwsContext = std::unique_ptr<SwsContext, detail::SwsDeleter>;
using UniqueAVCodecParameters = std::unique_ptr<AVCodecParameters, detail::CodecParametersDeleter>;
using UniqueAVBufferRef = std::unique_ptr<AVBufferRef, detail::BufferRefDeleter>;

[[nodiscard]] UniqueAVFrame make_av_frame();
[[nodiscard]] UniqueAVPacket make_av_packet();
// Whether `pkt` of an H.264 or HEVC stream holds an IDR picture (H.264's NAL unit
// type 5, HEVC's IDR_W_RADL and IDR_N_LP): nothing after it refers to a picture
// before it (an HEVC CRA's leading pictures do). Length-prefixed NAL units where the
// decoder's extradata is an avcC or hvcC record (MP4, MKV), else Annex B start codes.
[[nodiscard]] bool idr_picture(const AVCodecContext& decoder, const AVPacket& pkt);

// A stream's side data of `type` (FFmpeg 6.1 moved it into codecpar; one place knows both):
// its bytes and size, or {nullptr, 0}.
[[nodiscard]] std::pair<const std::uint8_t*, std::size_t> stream_side_data(
    const AVStream* s, AVPacketSideDataType type);
// New side data of `type` and `size` bytes on `s`, to fill; null when out of memory.
[[nodiscard]] std::uint8_t* new_stream_side_data(AVStream* s, AVPacketSideDataType type,
                                                 std::size_t size);

// Watches blocking reads: FFmpeg polls it while it waits for data. A read
// that waits longer than the stall timeout, or any read once `interrupt`
// (Ctrl-C) is set, is abandoned (AVERROR_EXIT) and the watch says which.
inline constexpr double kNoStallLimit = 1e9;  // seconds: a watch that only hears Ctrl-C (files)

class InputWatch {
 public:
  explicit InputWatch(double stall_timeout_s, const std::atomic<int>* interrupt = nullptr)
      : timeout_s_(stall_timeout_s), interrupt_(interrupt) {}
  InputWatch(const InputWatch&) = delete;
  InputWatch& operator=(const InputWatch&) = delete;
  void arm();     // a read starts now: it may wait stall_timeout_s
  void disarm();  // no time limit (Ctrl-C still interrupts)
  // A read ran out of time; from then on every read fails at once, until
  // reset() (open_input() resets: a reconnect starts afresh).
  [[nodiscard]] bool stalled() const;
  void reset();
  [[nodiscard]] bool interrupted() const { return interrupted_.load(); }
  [[nodiscard]] double timeout_s() const { return timeout_s_; }
  [[nodiscard]] AVIOInterruptCB callback() { return {&InputWatch::poll, this}; }

 private:
  static int poll(void* self);
  double timeout_s_;
  const std::atomic<int>* interrupt_;
  std::atomic<std::int64_t> deadline_ns_{0};  // steady clock; 0: none
  std::atomic<bool> tripped_{false}, interrupted_{false};
};

// Watches the writes to an output that is a stream (a FIFO, a pipe, a URL):
// after Ctrl-C (`interrupt`), a write that has waited longer than `grace` for
// its reader is abandoned (AVERROR_EXIT), and so is every later one. A reader
// that keeps reading gets everything, however long the encoder takes to drain;
// one that stopped reading no longer holds the run. FFmpeg polls it before each
// write, and again when a write blocked in the kernel returns EINTR; a write
// has waited since the first poll that saw the context's position where it is.
class OutputWatch {
 public:
  OutputWatch(const std::atomic<int>* interrupt, double grace_s)
      : interrupt_(interrupt), grace_ns_(static_cast<std::int64_t>(grace_s * 1e9)) {}
  OutputWatch(const OutputWatch&) = delete;
  OutputWatch& operator=(const OutputWatch&) = delete;
  [[nodiscard]] AVIOInterruptCB callback() { return {&OutputWatch::poll, this}; }
  void follow(const AVIOContext* pb) { pb_ = pb; }  // once open: its position is progress

 private:
  static int poll(void* self);
  const std::atomic<int>* interrupt_;
  std::int64_t grace_ns_;
  const AVIOContext* pb_ = nullptr;
  // On the writing thread only: the position last seen, and since when.
  std::int64_t pos_ = -1, since_ns_ = 0;
  bool abandoned_ = false;
};

// The files a muxer opens itself: HLS and DASH write one segment file at a
// time and an index beside them, and libavformat 59's muxers close each one
// without reading its error, so a full disk left a short segment in a run that
// said it had finished. Attached to a context (its io_open, io_close2 and
// opaque, which those muxers hand to their inner contexts), it keeps the first
// file that failed. Outlives the context: freeing one closes the files it left open.
class MuxerFiles {
 public:
  MuxerFiles() = default;
  MuxerFiles(const MuxerFiles&) = delete;
  MuxerFiles& operator=(const MuxerFiles&) = delete;
  void attach(AVFormatContext* oc);
  // Throws ffmpeg_error "writing 'DIR/seg_00003.ts': File too large" once a file failed.
  void check() const;

 private:
  using OpenFn = int (*)(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**);
  using CloseFn = int (*)(AVFormatContext*, AVIOContext*);
  static int open(AVFormatContext* s, AVIOContext** pb, const char* url, int flags,
                  AVDictionary** options);
  static int close(AVFormatContext* s, AVIOContext* pb);
  OpenFn open_ = nullptr;    // libavformat's own
  CloseFn close_ = nullptr;  // libavformat's own
  mutable std::mutex mutex_;
  std::map<const AVIOContext*, std::string> urls_;  // the files open now
  std::string url_;                                 // the first that failed
  int error_ = 0;
};

// The index of `in`'s video stream (FFmpeg's best), not a cover picture (an MP3's or M4A's
// attached picture is one still, not video). input_error naming `path` where there is none.
[[nodiscard]] int video_stream(AVFormatContext& in, const std::string& path);

}  // namespace vpipe
