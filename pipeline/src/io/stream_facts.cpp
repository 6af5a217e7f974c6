#include "vpipe/pipeline/io/stream_facts.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <set>
#include <string_view>

#include "vpipe/pipeline/graph/av.hpp"

namespace vpipe {

void copy_display_matrix(const AVStream* in, AVStream* out) {
  const auto [matrix, size] = stream_side_data(in, AV_PKT_DATA_DISPLAYMATRIX);
  if (!matrix) return;
  if (std::uint8_t* copy = new_stream_side_data(out, AV_PKT_DATA_DISPLAYMATRIX, size))
    std::memcpy(copy, matrix, size);
}

void keep_codec_tag(const AVCodecParameters* in, AVStream* out, const AVOutputFormat* container) {
  unsigned tag = 0;
  const bool keep =
      in->codec_tag != 0 && (!container->codec_tag ||
                             av_codec_get_id(container->codec_tag, in->codec_tag) == in->codec_id ||
                             !av_codec_get_tag2(container->codec_tag, in->codec_id, &tag));
  out->codecpar->codec_tag = keep ? in->codec_tag : 0;
}

int copy_chapters(const AVFormatContext* in, AVFormatContext* out, double from_s, double until_s,
                  double shift_s) {
  // The muxers that write chapters (libavformat's matroskaenc, movenc, oggenc).
  static const std::set<std::string_view> kWrite = {
      "matroska", "webm", "mov", "mp4", "ipod", "ismv", "3gp", "3g2", "f4v", "ogg", "ogv"};
  if (in->nb_chapters == 0) return 0;
  if (!kWrite.contains(out->oformat->name)) return -1;
  int kept = 0;
  for (unsigned i = 0; i < in->nb_chapters; ++i) {
    const AVChapter* c = in->chapters[i];
    const double q = av_q2d(c->time_base);
    const double start = std::max(static_cast<double>(c->start) * q, from_s);
    const double end = std::min(static_cast<double>(c->end) * q, until_s);
    if (end <= start) continue;
    const auto tick = [&](double s) {
      return static_cast<std::int64_t>(std::llround((s + shift_s) / q));
    };
    // As ffmpeg's copy_chapters: the muxer's context frees them, with their metadata.
    auto* ch = static_cast<AVChapter*>(av_mallocz(sizeof(AVChapter)));
    if (!ch) throw std::bad_alloc();
    ch->id = c->id;
    ch->time_base = c->time_base;
    ch->start = tick(start);
    ch->end = tick(end);
    av_dict_copy(&ch->metadata, c->metadata, 0);  // the title
    if (av_dynarray_add_nofree(&out->chapters, reinterpret_cast<int*>(&out->nb_chapters), ch) < 0) {
      av_dict_free(&ch->metadata);
      av_free(ch);
      throw std::bad_alloc();
    }
    ++kept;
  }
  return kept;
}

}  // namespace vpipe
