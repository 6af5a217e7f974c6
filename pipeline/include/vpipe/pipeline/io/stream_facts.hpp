// What an input's streams and container say beyond their packets, carried to an output as
// FFmpeg's tool carries it: a stream's display matrix (a phone's rotation), its codec tag
// where the output's container takes it, and the container's chapters. One home for the
// transcode's outputs (transcode_output.cpp) and the stream copy and joins (join.cpp).
#pragma once

extern "C" {
#include <libavformat/avformat.h>
}

namespace vpipe {

// The input stream's display matrix, on the output stream: the picture is stored as it was and
// a player turns it as it turned the input.
void copy_display_matrix(const AVStream* in, AVStream* out);

// A copied stream's codec tag, kept where the output's container takes it (FFmpeg's rule: a
// container without a tag table, or whose table gives this codec this tag or none): an
// MP4's avc1 stays avc1 in AVI, which needs it; MKV, which has its own, gets 0.
void keep_codec_tag(const AVCodecParameters* in, AVStream* out, const AVOutputFormat* container);

// The chapters of `in` inside [from_s, until_s) (on its clock), clipped to it and moved by
// shift_s, added to `out` before its header. Returns how many were kept, or -1 where the
// muxer writes no chapters (MPEG-TS and the like drop them without a word).
int copy_chapters(const AVFormatContext* in, AVFormatContext* out, double from_s, double until_s,
                  double shift_s);

}  // namespace vpipe
