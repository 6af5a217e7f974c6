#include "vpipe/pipeline/io/reencode.hpp"

#include <fmt/format.h>

#include <new>

#include "vpipe/base/errors.hpp"

namespace vpipe {

UniqueAVCodecContext open_stream_decoder(const AVStream* in, std::string_view what) {
  const AVCodecParameters* par = in->codecpar;
  const AVCodec* dec = avcodec_find_decoder(par->codec_id);
  if (!dec) throw input_error(fmt::format("no decoder for {}", avcodec_get_name(par->codec_id)));
  UniqueAVCodecContext ctx(avcodec_alloc_context3(dec));
  if (!ctx) throw std::bad_alloc();
  av_check(avcodec_parameters_to_context(ctx.get(), par),
           fmt::format("{} decoder parameters", what));
  ctx->pkt_timebase = in->time_base;
  av_check(avcodec_open2(ctx.get(), dec, nullptr), fmt::format("open the {} decoder", what));
  return ctx;
}

}  // namespace vpipe
