// What each container holds and refuses, and the form a ladder writes its
// segments in: facts about FFmpeg's muxers that the plan and the outputs ask
// before any file is opened.
#pragma once

#include <optional>
#include <string>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

// The container `output` is written in: the name's extension, or MPEG-TS for
// a network output. Null when the name says nothing FFmpeg knows.
[[nodiscard]] const AVOutputFormat* output_container(const std::string& output);
// Whether `container` can hold `codec`: FFmpeg's own answer where it has one
// (avformat_query_codec; Matroska's also takes what it writes as VFW/ACM), else a table for
// the muxers that give none (MPEG-TS, MPEG-PS and its VCD/SVCD/DVD forms, Ogg, GIF, Y4M);
// nullopt when nobody knows (the muxer will say).
[[nodiscard]] std::optional<bool> container_holds(const AVOutputFormat* container, AVCodecID codec);
// The container a ladder muxer writes `codec` into (HLS: MPEG-TS segments;
// DASH: WebM for Opus, Vorbis, VP8, VP9, else MP4); any other, itself.
[[nodiscard]] const AVOutputFormat* segment_container(const AVOutputFormat* container,
                                                      AVCodecID codec);
// The sample rate `container`'s muxer needs of `codec` audio at `rate`, where it refuses `rate`
// (MXF: 48 kHz only; FLV's PCM: 44.1 kHz and its halves); 0 where it takes it.
[[nodiscard]] int container_sample_rate(const AVOutputFormat* container, AVCodecID codec, int rate);
// Why `container` will not take a stream of `par` as it is ("mp4 cannot hold
// it", "hls's mpegts segments cannot hold it"), or empty. Asked of the segments'
// container for a ladder; beyond container_holds, its muxer is tried with the stream's
// own parameters (its header, on a throwaway context writing to memory): libavformat 59
// lists FLAC and TrueHD for MP4, then refuses them at the header as experimental.
[[nodiscard]] std::string cannot_hold(const AVOutputFormat* container,
                                      const AVCodecParameters* par);

}  // namespace vpipe
