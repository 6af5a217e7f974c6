// Issue #24's pure parts: --gpus and where a new stream goes.
#include <gtest/gtest.h>

#include "vpipe/base/errors.hpp"
#include "vpipe/pipeline/parallel/gpu_placement.hpp"
#include "vpipe/pipeline/session/transcode.hpp"

using vpipe::GpuLoad;
using vpipe::parse_gpus;
using vpipe::place_stream;

TEST(Gpus, AllACountOrAList) {
  EXPECT_EQ(parse_gpus("all", 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_gpus("1", 2), (std::vector<int>{0})) << "a bare number is a count";
  EXPECT_EQ(parse_gpus("2", 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_gpus("1,", 2), (std::vector<int>{1})) << "a comma makes it a list";
  EXPECT_EQ(parse_gpus("1,0", 2), (std::vector<int>{1, 0}));
  for (const char* bad : {"3", "0", "0,2", "0,0", "x", ",", "-1,"})
    EXPECT_THROW((void)parse_gpus(bad, 2), vpipe::usage_error) << bad;
  EXPECT_THROW((void)parse_gpus("all", 0), vpipe::usage_error) << "no device visible";
}

TEST(Placement, TheGpuWithTheMostHeadroomTakesTheStream) {
  const std::size_t GB = 1u << 30;
  std::vector<GpuLoad> gpus = {{0, 0, 7, 0, 100 * GB, 0}, {1, 0, 7, 0, 100 * GB, 0}};
  EXPECT_EQ(place_stream(gpus), 0u) << "a tie goes to the lower index";
  // Fill by placement: the streams alternate, so 14 streams land 7 and 7.
  for (int k = 0; k < 14; ++k) ++gpus[place_stream(gpus)].streams;
  EXPECT_EQ(gpus[0].streams, 7);
  EXPECT_EQ(gpus[1].streams, 7);
  // Memory nearly full on GPU 0: its headroom is its memory's, not its engines'.
  gpus = {{0, 1, 7, 95 * GB, 100 * GB, 0}, {1, 3, 7, 10 * GB, 100 * GB, 0}};
  EXPECT_EQ(place_stream(gpus), 1u);
  // Equal headroom: the GPU that measured more fps per stream.
  gpus = {{0, 2, 7, 0, 100 * GB, 300}, {1, 2, 7, 0, 100 * GB, 450}};
  EXPECT_EQ(place_stream(gpus), 1u);
  // A GPU out of service (budget 0) is never chosen; none left is an error.
  gpus = {{0, 0, 7, 0, 0, 0}, {1, 6, 7, 0, 100 * GB, 0}};
  EXPECT_EQ(place_stream(gpus), 1u);
  gpus[1].memory_budget = 0;
  EXPECT_THROW((void)place_stream(gpus), vpipe::input_error);
}

// --on-gpu-error move: the failing GPU goes out of service, the stream moves to the GPU with the
// most headroom among the rest, and later placements never pick the failed GPU.
TEST(Placement, AStreamThatFailsOnAGpuMovesAndTheGpuLeavesService) {
  const std::size_t GB = 1u << 30;
  std::vector<GpuLoad> gpus = {
      {0, 3, 7, 0, 100 * GB, 0}, {1, 3, 7, 0, 100 * GB, 0}, {2, 1, 7, 0, 100 * GB, 0}};
  const auto moved = vpipe::move_stream(gpus, 0);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(*moved, 2u) << "the GPU with the most headroom left";
  EXPECT_EQ(gpus[0].memory_budget, 0u) << "out of service";
  EXPECT_EQ(gpus[0].streams, 2) << "the moved stream left it";
  EXPECT_EQ(gpus[2].streams, 2) << "and is counted where it went";
  for (int k = 0; k < 6; ++k) EXPECT_NE(place_stream(gpus), 0u);
  // Its other streams fail there in turn: each moves.
  EXPECT_TRUE(vpipe::move_stream(gpus, 0).has_value());
  // One GPU: nowhere to go.
  std::vector<GpuLoad> one = {{0, 1, 7, 0, 100 * GB, 0}};
  EXPECT_FALSE(vpipe::move_stream(one, 0).has_value());
  EXPECT_EQ(one[0].memory_budget, 0u);
}

// The table a fleet's streams share as they start, fail and leave (`vpipe run --gpus`).
TEST(Placement, APlacerCountsStreamsInAndOutAndMovesThem) {
  const std::size_t GB = 1u << 30;
  vpipe::GpuPlacer placer({{3, 0, 7, 0, 100 * GB, 0}, {5, 0, 7, 0, 100 * GB, 0}});
  EXPECT_EQ(placer.place(), 3) << "devices are named, not indexed";
  EXPECT_EQ(placer.place(), 5);
  EXPECT_EQ(placer.place(), 3);
  placer.release(3);
  placer.release(3);
  EXPECT_EQ(placer.loads()[0].streams, 0);
  EXPECT_EQ(placer.place(), 3) << "the emptied GPU has the most headroom again";
  EXPECT_EQ(placer.move_from(3), std::optional<int>(5));
  EXPECT_EQ(placer.loads()[1].streams, 2);
  EXPECT_EQ(placer.place(), 5) << "GPU 3 is out of service";
  EXPECT_FALSE(placer.move_from(5).has_value()) << "no GPU left";
  EXPECT_THROW((void)placer.place(), vpipe::input_error);
  EXPECT_THROW(placer.release(4), vpipe::logic_error) << "not one of the run's GPUs";
}

// What --on-gpu-error move acts on: a CUDA error, bare or inside a failed run; not bad input.
TEST(Placement, OnlyCudaErrorsAreGpuFaults) {
  using vpipe::is_gpu_fault;
  EXPECT_TRUE(is_gpu_fault(vpipe::out_of_memory("2 MB over the budget")));
  EXPECT_TRUE(is_gpu_fault(vpipe::cuda_error(cudaErrorLaunchFailure, "launch failed")));
  EXPECT_TRUE(is_gpu_fault(vpipe::transcode_failed("oom", {}, true)));
  EXPECT_FALSE(is_gpu_fault(vpipe::transcode_failed("writer failed", {}, false)));
  EXPECT_FALSE(is_gpu_fault(vpipe::input_error("in.mp4: no video stream")));
}
