// The colour a picture's tags say, the tags that say a colour, and swscale set to the same
// chroma siting: the filters' half of color.hpp's rule (declared in filter.hpp).
#include <fmt/format.h>

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "vpipe/pipeline/filters/filter.hpp"

namespace vpipe {

namespace {
// ChromaSiting is AVChromaLocation less one (color.hpp): FFmpeg's name for a siting.
AVChromaLocation location_of(ChromaSiting s) {
  return static_cast<AVChromaLocation>(AVCHROMA_LOC_LEFT + static_cast<int>(s));
}

bool is_420(AVPixelFormat f) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(f);
  return d && !(d->flags & AV_PIX_FMT_FLAG_RGB) && d->nb_components >= 3 && d->log2_chroma_w == 1 &&
         d->log2_chroma_h == 1;
}
}  // namespace

ColorSpec colour_of_tags(AVColorSpace space, AVColorRange range, AVPixelFormat pix_fmt,
                         AVChromaLocation loc, AVCodecID codec) {
  ColorSpec c = kUntaggedColour;
  if (space == AVCOL_SPC_BT709) c.matrix = ColorMatrix::kBT709;
  if (space == AVCOL_SPC_BT2020_NCL || space == AVCOL_SPC_BT2020_CL)
    c.matrix = ColorMatrix::kBT2020;
  if ((range == AVCOL_RANGE_JPEG && !is_rgb(pix_fmt)) || is_jpeg_range(pix_fmt))
    c.range = ColorRange::kFull;
  if (loc >= AVCHROMA_LOC_LEFT && loc <= AVCHROMA_LOC_BOTTOM)
    c.siting = static_cast<ChromaSiting>(loc - AVCHROMA_LOC_LEFT);
  else if (codec == AV_CODEC_ID_MPEG1VIDEO || codec == AV_CODEC_ID_MJPEG || is_jpeg_range(pix_fmt))
    c.siting = ChromaSiting::kCenter;
  return c;
}

ColourTags tags_of_colour(ColorSpec c, AVPixelFormat out) {
  if (is_rgb(out)) return {AVCOL_SPC_RGB, AVCOL_RANGE_JPEG, AVCHROMA_LOC_UNSPECIFIED};
  const AVColorSpace space = c.matrix == ColorMatrix::kBT709    ? AVCOL_SPC_BT709
                             : c.matrix == ColorMatrix::kBT2020 ? AVCOL_SPC_BT2020_NCL
                                                                : AVCOL_SPC_SMPTE170M;
  return {space, c.range == ColorRange::kFull ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG,
          is_420(out) ? location_of(c.siting) : AVCHROMA_LOC_UNSPECIFIED};
}

void ColourTags::apply(AVCodecContext* c) const {
  c->colorspace = space;
  c->color_range = range;
  c->chroma_sample_location = chroma;
}

UniqueSwsContext sited_sws(const FrameFormat& from, const FrameFormat& to, int flags,
                           ChromaSiting siting) {
  UniqueSwsContext sws(sws_alloc_context());
  if (!sws) throw std::bad_alloc();
  int h = 0, v = 0;
  avcodec_enum_to_chroma_pos(&h, &v, location_of(siting));
  SwsContext* c = sws.get();
  const bool ok = av_opt_set_int(c, "srcw", from.width, 0) >= 0 &&
                  av_opt_set_int(c, "srch", from.height, 0) >= 0 &&
                  av_opt_set_int(c, "src_format", from.pix_fmt, 0) >= 0 &&
                  av_opt_set_int(c, "dstw", to.width, 0) >= 0 &&
                  av_opt_set_int(c, "dsth", to.height, 0) >= 0 &&
                  av_opt_set_int(c, "dst_format", to.pix_fmt, 0) >= 0 &&
                  av_opt_set_int(c, "sws_flags", flags, 0) >= 0 &&
                  (!is_420(from.pix_fmt) || (av_opt_set_int(c, "src_h_chr_pos", h, 0) >= 0 &&
                                             av_opt_set_int(c, "src_v_chr_pos", v, 0) >= 0)) &&
                  (!is_420(to.pix_fmt) || (av_opt_set_int(c, "dst_h_chr_pos", h, 0) >= 0 &&
                                           av_opt_set_int(c, "dst_v_chr_pos", v, 0) >= 0));
  if (!ok || sws_init_context(c, nullptr, nullptr) < 0) sws.reset();
  return sws;
}

std::string colour_name(ColorSpec c) {
  return fmt::format("{} {} range",
                     c.matrix == ColorMatrix::kBT709    ? "BT.709"
                     : c.matrix == ColorMatrix::kBT2020 ? "BT.2020"
                                                        : "BT.601",
                     c.range == ColorRange::kFull ? "full" : "limited");
}

}  // namespace vpipe
