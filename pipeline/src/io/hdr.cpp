#include "vpipe/pipeline/io/hdr.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "vpipe/pipeline/io/first_frame.hpp"

namespace vpipe {

namespace {

void take(Hdr10& h, const AVMasteringDisplayMetadata* m, const AVContentLightMetadata* l) {
  if (m && m->has_primaries && m->has_luminance && !h.mastering) h.mastering = *m;
  if (l && (l->MaxCLL || l->MaxFALL) && !h.light) h.light = *l;
}

// The first frame's.
void from_first_frame(Hdr10& h, FirstFrame& first) {
  const AVFrame* frame = first.get();
  if (!frame) return;
  const auto* m = av_frame_get_side_data(frame, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA);
  const auto* l = av_frame_get_side_data(frame, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL);
  take(h, m ? reinterpret_cast<const AVMasteringDisplayMetadata*>(m->data) : nullptr,
       l ? reinterpret_cast<const AVContentLightMetadata*>(l->data) : nullptr);
}

long units(AVRational r, double per_unit) { return std::lround(av_q2d(r) / per_unit); }

}  // namespace

std::string Hdr10::describe() const {
  std::string s = "HDR10 metadata carried:";
  if (mastering)
    s += fmt::format(" mastering display {:.4f}–{:.0f} cd/m²", av_q2d(mastering->min_luminance),
                     av_q2d(mastering->max_luminance));
  if (light) s += fmt::format(" MaxCLL {} MaxFALL {}", light->MaxCLL, light->MaxFALL);
  return s;
}

Hdr10 read_hdr10(const AVStream* video, FirstFrame& first) {
  Hdr10 h;
  take(h,
       reinterpret_cast<const AVMasteringDisplayMetadata*>(
           stream_side_data(video, AV_PKT_DATA_MASTERING_DISPLAY_METADATA).first),
       reinterpret_cast<const AVContentLightMetadata*>(
           stream_side_data(video, AV_PKT_DATA_CONTENT_LIGHT_LEVEL).first));
  const auto trc = video->codecpar->color_trc;
  if ((!h.mastering || !h.light) && (trc == AVCOL_TRC_SMPTE2084 || trc == AVCOL_TRC_ARIB_STD_B67))
    from_first_frame(h, first);
  return h;
}

std::string x265_hdr10_params(const Hdr10& h) {
  std::string p;
  if (h.mastering) {
    const auto& m = *h.mastering;  // primaries: [0] red, [1] green, [2] blue
    const auto xy = [&](const AVRational* c) {
      return fmt::format("({},{})", units(c[0], 0.00002), units(c[1], 0.00002));
    };
    p = fmt::format("master-display=G{}B{}R{}WP{}L({},{})", xy(m.display_primaries[1]),
                    xy(m.display_primaries[2]), xy(m.display_primaries[0]), xy(m.white_point),
                    units(m.max_luminance, 0.0001), units(m.min_luminance, 0.0001));
  }
  if (h.light)
    p += fmt::format("{}max-cll={},{}", p.empty() ? "" : ":", h.light->MaxCLL, h.light->MaxFALL);
  return p;
}

void add_hdr10_side_data(AVStream* out, const Hdr10& h) {
  if (h.mastering)
    if (auto* d = new_stream_side_data(out, AV_PKT_DATA_MASTERING_DISPLAY_METADATA,
                                       sizeof(AVMasteringDisplayMetadata)))
      std::memcpy(d, &*h.mastering, sizeof(AVMasteringDisplayMetadata));
  if (h.light)
    if (auto* d = new_stream_side_data(out, AV_PKT_DATA_CONTENT_LIGHT_LEVEL,
                                       sizeof(AVContentLightMetadata)))
      std::memcpy(d, &*h.light, sizeof(AVContentLightMetadata));
}

}  // namespace vpipe
