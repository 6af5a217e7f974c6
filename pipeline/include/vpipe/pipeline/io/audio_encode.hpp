// Audio that a container cannot hold as it is (AAC into WebM, PCM into MP4),
// or asked to be re-encoded (--audio encode): decoded, resampled with
// libswresample to what the encoder takes, and encoded in the encoder's frame
// size, timestamps following the input's (issue #43, item 4).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

extern "C" {
#include <libavutil/audio_fifo.h>
#include <libswresample/swresample.h>
}

#include "vpipe/pipeline/graph/av.hpp"
#include "vpipe/pipeline/io/containers.hpp"
#include "vpipe/pipeline/io/reencode.hpp"

namespace vpipe {

// The codec an audio stream is re-encoded to for `container`: AAC where the
// container holds it (MP4, MOV, MPEG-TS, MKV), else the muxer's own default
// (Opus for WebM, Vorbis for Ogg). AV_CODEC_ID_NONE: the container takes no audio.
[[nodiscard]] AVCodecID usual_audio_codec(const AVOutputFormat* container);

// What a re-encoded audio stream is made: each 0 is the input's (or the encoder's nearest).
struct AudioShape {
  std::int64_t bitrate = 0;  // 0: the encoder's default
  int channels = 0;          // mixed to this many, in their usual layout
  int rate = 0;              // resampled to this
  bool exact = false;        // channels and rate were asked for: the encoder's nearest is refused
  bool global_header = false;
};

class AudioReencoder final : public StreamReencoder {
 public:
  // Throws input_error naming what failed, usage_error where the encoder cannot code an exact
  // shape asked for (audio_channels, audio_rate).
  AudioReencoder(const AVStream* in, const AVCodec* codec, const AudioShape& shape);
  [[nodiscard]] const AVCodecContext* encoder() const override { return encoder_.get(); }
  [[nodiscard]] std::vector<UniqueAVPacket> push(const AVPacket* pkt) override;
  [[nodiscard]] std::int64_t errors() const override { return errors_; }

 private:
  struct SwrFree {
    void operator()(SwrContext* s) const { swr_free(&s); }
  };
  struct FifoFree {
    void operator()(AVAudioFifo* f) const { av_audio_fifo_free(f); }
  };
  void convert(const AVFrame* in);  // into the FIFO (nullptr: flush)
  void encode(const AVFrame* frame, std::vector<UniqueAVPacket>& out);  // nullptr: drain
  void drain_fifo(bool all, std::vector<UniqueAVPacket>& out);

  AVRational in_tb_;
  // Members die in this order: the FIFO and resampler hold no reference to the codecs.
  UniqueAVCodecContext decoder_;
  UniqueAVCodecContext encoder_;
  std::unique_ptr<SwrContext, SwrFree> swr_;
  std::unique_ptr<AVAudioFifo, FifoFree> fifo_;
  std::int64_t next_pts_ = AV_NOPTS_VALUE;  // the next encoded frame's, in samples
  std::int64_t errors_ = 0;
};

}  // namespace vpipe
