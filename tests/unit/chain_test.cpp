#include <gtest/gtest.h>

#include "vpipe/pipeline/filter.hpp"

using namespace vpipe;

namespace {
const FrameFormat k720{AV_PIX_FMT_YUV420P, 1280, 720};

// The message of the chain_error that building `chain` throws, or "".
std::string chain_error_of(const std::string& chain, FrameFormat in = k720) {
  try {
    (void)build_chain(parse_chain(chain), in);
  } catch (const chain_error& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST(ChainParser, ParsesPositionalAndNamedArguments) {
  const auto specs = parse_chain("resize=1280x720, blur=sigma=1.5 ,crop=w=64:h=32:x=0:y=2,invert");
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].name, "resize");
  ASSERT_EQ(specs[0].args.size(), 1u);
  EXPECT_EQ(specs[0].args[0].first, "");
  EXPECT_EQ(specs[0].args[0].second, "1280x720");
  EXPECT_EQ(specs[1].name, "blur");
  EXPECT_EQ(specs[1].args[0], (std::pair<std::string, std::string>{"sigma", "1.5"}));
  EXPECT_EQ(specs[2].args.size(), 4u);
  EXPECT_EQ(specs[3].name, "invert");
  EXPECT_TRUE(specs[3].args.empty());
  EXPECT_TRUE(parse_chain("").empty());
  EXPECT_TRUE(parse_chain("   ").empty());
}

TEST(ChainParser, RejectsMalformedText) {
  EXPECT_THROW((void)parse_chain("resize=1280x720,,blur"), chain_error);
  EXPECT_THROW((void)parse_chain(",blur"), chain_error);
  EXPECT_THROW((void)parse_chain("blur="), chain_error);
  EXPECT_THROW((void)parse_chain("blur=sigma="), chain_error);
  EXPECT_THROW((void)parse_chain("=3"), chain_error);
  EXPECT_THROW((void)parse_chain("bl ur=3"), chain_error);
}

TEST(ChainBuilder, ConfiguresFormatsThroughTheChain) {
  const auto chain = build_chain(parse_chain("resize=640x360,blur=sigma=1.5,crop=w=320:h=240"), k720);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].out, (FrameFormat{AV_PIX_FMT_YUV420P, 640, 360}));
  EXPECT_EQ(chain[2].out, (FrameFormat{AV_PIX_FMT_YUV420P, 320, 240}));
  const auto keep = build_chain(parse_chain("resize=640x-1"), {AV_PIX_FMT_YUV420P, 1920, 1080});
  EXPECT_EQ(keep[0].out.height, 360);
}

TEST(ChainBuilder, KeepsIdentityFiltersAsPassThroughAndInsertsConversions) {
  auto same = build_chain(parse_chain("blur=sigma=0,resize=1280x720"), k720);
  ASSERT_EQ(same.size(), 2u);
  EXPECT_TRUE(same[0].filter->is_identity());
  EXPECT_TRUE(same[1].filter->is_identity()) << "a resize to the input's own size";
  // After a size change mid-stream the same resize has work to do again.
  same[1].follow({AV_PIX_FMT_YUV420P, 640, 360});
  EXPECT_FALSE(same[1].filter->is_identity());
  EXPECT_EQ(same[1].out, k720);
  const auto chain = build_chain(parse_chain("blur=2"), {AV_PIX_FMT_YUV420P10LE, 64, 64});
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].label, "format=yuv420p");
  EXPECT_EQ(chain[1].in.pix_fmt, AV_PIX_FMT_YUV420P);
}

TEST(ChainBuilder, ErrorsNameTheFilterAndTheProblem) {
  EXPECT_NE(chain_error_of("sharpen=3").find("unknown filter 'sharpen'"), std::string::npos);
  EXPECT_NE(chain_error_of("sharpen=3").find("blur"), std::string::npos) << "lists what exists";
  EXPECT_NE(chain_error_of("blur=sigma=-1").find("blur: bad value '-1' for sigma"),
            std::string::npos);
  EXPECT_NE(chain_error_of("blur=radius=2").find("unknown parameter 'radius'"), std::string::npos);
  EXPECT_NE(chain_error_of("blur=1:2").find("too many values"), std::string::npos);
  EXPECT_NE(chain_error_of("blur=sigma=1:sigma=2").find("given twice"), std::string::npos);
  EXPECT_NE(chain_error_of("resize=abc").find("WIDTHxHEIGHT"), std::string::npos);
  EXPECT_NE(chain_error_of("resize").find("missing required parameter 'size'"), std::string::npos);
  EXPECT_NE(chain_error_of("resize=641x360").find("multiple of 2x2"), std::string::npos);
  EXPECT_NE(chain_error_of("crop=w=2000:h=100").find("does not fit"), std::string::npos);
  EXPECT_NE(chain_error_of("flip=diagonal").find("one of h, v, hv"), std::string::npos);
  EXPECT_NE(chain_error_of("format=yuv999").find("unknown pixel format"), std::string::npos);
}

TEST(FilterRegistry, ListsBuiltinsAndRejectsDuplicates) {
  auto& reg = FilterRegistry::instance();
  for (const char* name : {"resize", "blur", "crop", "flip", "invert", "grayscale", "format"})
    EXPECT_TRUE(reg.contains(name)) << name;
  EXPECT_FALSE(reg.contains("nope"));
  FilterInfo dup = reg.info("blur");
  EXPECT_THROW(reg.add(dup), logic_error);
}
