#include "vpipe/pipeline/io/audio_copy.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/io/containers.hpp"

namespace vpipe {

AudioCopy::AudioCopy(UniqueDemuxContext src, AVFormatContext* out, std::string label, double from_s,
                     bool every_track, bool cut)
    : src_(std::move(src)),
      out_(out),
      label_(std::move(label)),
      from_s_(from_s),
      cut_(cut),
      map_(src_->nb_streams, -1),
      pkt_(make_av_packet()) {
  for (unsigned i = 0; i < src_->nb_streams; ++i) {
    const AVStream* s = src_->streams[i];
    if (s->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
    if (const auto cannot = cannot_hold(out_->oformat, s->codecpar); !cannot.empty()) {
      if (every_track)
        throw usage_error(
            fmt::format("{}: audio copy, but audio stream #{} ({}) cannot be "
                        "copied: {} (audio none leaves it out; .mkv holds it)",
                        label_, i, avcodec_get_name(s->codecpar->codec_id), cannot));
      spdlog::warn("{}: audio stream #{} ({}) not copied: {}", label_, i,
                   avcodec_get_name(s->codecpar->codec_id), cannot);
      continue;
    }
    AVStream* os = avformat_new_stream(out_, nullptr);
    av_check(avcodec_parameters_copy(os->codecpar, s->codecpar), "audio parameters");
    os->codecpar->codec_tag = 0;
    os->time_base = s->time_base;
    os->disposition = s->disposition;             // the default track stays the default
    av_dict_copy(&os->metadata, s->metadata, 0);  // its language and title
    map_[i] = os->index;
  }
  pkt_->stream_index = -1;  // nothing read yet
  if (cut_) {               // a second early: an MP4's audio index lands on the packet at or before
    const auto ts = static_cast<std::int64_t>((from_s_ - 1.0) * AV_TIME_BASE);
    (void)avformat_seek_file(src_.get(), -1, INT64_MIN, ts, ts, 0);  // failed: from the start
  }
}

void AudioCopy::pump(double until_s) {
  while (src_) {
    if (pkt_->stream_index < 0 && av_read_frame(src_.get(), pkt_.get()) < 0) {
      src_.reset();  // the end (or damage): nothing more to copy
      return;
    }
    const int index = pkt_->stream_index;
    const int target =
        index < static_cast<int>(map_.size()) ? map_[static_cast<std::size_t>(index)] : -1;
    const AVRational tb = src_->streams[index]->time_base;
    const std::int64_t ts = pkt_->dts != AV_NOPTS_VALUE ? pkt_->dts : pkt_->pts;
    const double at_s = ts == AV_NOPTS_VALUE ? from_s_ : static_cast<double>(ts) * av_q2d(tb);
    if (target >= 0 && at_s - from_s_ > until_s) return;  // kept for a later pump
    if (target >= 0 && !(cut_ && at_s < from_s_ - 1e-9)) {
      const auto shift = static_cast<std::int64_t>(std::llround(from_s_ / av_q2d(tb)));
      if (pkt_->pts != AV_NOPTS_VALUE) pkt_->pts -= shift;
      if (pkt_->dts != AV_NOPTS_VALUE) pkt_->dts -= shift;
      av_packet_rescale_ts(pkt_.get(), tb, out_->streams[target]->time_base);
      pkt_->stream_index = target;
      pkt_->pos = -1;
      if (av_interleaved_write_frame(out_, pkt_.get()) == 0) ++packets_;
    }
    av_packet_unref(pkt_.get());
    pkt_->stream_index = -1;
  }
}

}  // namespace vpipe
