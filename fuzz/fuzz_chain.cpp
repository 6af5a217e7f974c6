// Fuzzes the filter-chain parser and builder, and runs the CPU filters the
// chain configures on a small frame. A user error (chain_error,
// not_negotiated) is the expected answer to junk; anything else that
// escapes, and any crash or sanitizer report, is a bug.
#include <cstdint>
#include <string>

#include "vpipe/pipeline/filters/filter.hpp"
#include "vpipe/pipeline/graph/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto specs = vpipe::parse_chain(text);
    for (const auto& s : specs)
      (void)vpipe::parse_params(vpipe::FilterRegistry::instance().info(s.name), s.args);
    const vpipe::FrameFormat input{AV_PIX_FMT_YUV420P, 64, 48};
    auto chain = vpipe::build_chain(specs, input);
    // Keep the work per input small (libFuzzer's timeout is 10 s): a resize may
    // ask for 65536x65536, and a blur of sigma 64 is ~400 taps a pixel per
    // pass. Every chain is parsed and built; only small ones are also run.
    if (chain.size() > 6) return 0;
    for (const auto& c : chain)
      if (static_cast<std::int64_t>(c.out.width) * c.out.height > (1 << 14)) return 0;
    vpipe::Frame frame = vpipe::Frame::allocate_host(input);
    for (int p = 0; p < frame.num_planes; ++p) {
      const auto& v = frame.planes[static_cast<std::size_t>(p)];
      for (int y = 0; y < v.height; ++y)
        for (std::size_t x = 0; x < v.row_bytes(); ++x)
          v.row(y)[x] = static_cast<std::uint8_t>(x * 7 + static_cast<std::size_t>(y) * 3 +
                                                  static_cast<std::size_t>(p));
    }
    for (auto& c : chain) {
      if (c.filter->is_identity()) continue;
      vpipe::Frame out = vpipe::Frame::allocate_host(c.out);
      c.filter->process(frame, out);
      frame = std::move(out);
    }
  } catch (const vpipe::chain_error&) {
  } catch (const vpipe::not_negotiated&) {
  }
  return 0;
}
