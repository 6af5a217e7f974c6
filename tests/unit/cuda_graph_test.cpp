// --graphs on: the pointers a captured graph's arguments hold into the input
// and output planes are found once and moved to the next frame's planes.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "vpipe/pipeline/filters/cuda_graph.hpp"

using vpipe::PatchSite;
using vpipe::PlaneRange;

namespace {
// A kernel's argument bytes: a struct of {pointer, int, int, pointer, size_t}.
std::vector<std::byte> args(std::uintptr_t a, std::uintptr_t b, std::uintptr_t c) {
  struct {
    std::uintptr_t p0;
    int w, h;
    std::uintptr_t p1;
    std::uintptr_t other;
  } s{a, 1920, 1080, b, c};
  std::vector<std::byte> bytes(sizeof s);
  std::memcpy(bytes.data(), &s, sizeof s);
  return bytes;
}
std::uintptr_t word_at(const std::vector<std::byte>& b, std::size_t offset) {
  std::uintptr_t w = 0;
  std::memcpy(&w, b.data() + offset, sizeof w);
  return w;
}
}  // namespace

TEST(GraphPatch, PointersIntoThePlanesAreFoundWithTheirOffsets) {
  const std::vector<PlaneRange> ranges{{0x7f0000000000, 4096}, {0x7f0000100000, 1024}};
  // Into plane 0 at +256, into plane 1 at +0, and a graph allocation (not a plane).
  const auto bytes = args(0x7f0000000100, 0x7f0000100000, 0x7f5000000000);
  const auto sites = vpipe::find_patch_sites(bytes, ranges);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].offset, 0u);
  EXPECT_EQ(sites[0].range, 0u);
  EXPECT_EQ(sites[0].delta, 0x100u);
  EXPECT_EQ(sites[1].offset, 16u);
  EXPECT_EQ(sites[1].range, 1u);
  EXPECT_EQ(sites[1].delta, 0u);
}

TEST(GraphPatch, AnAddressOnePastAPlaneIsNotItsPointer) {
  const std::vector<PlaneRange> ranges{{0x7f0000000000, 4096}};
  EXPECT_TRUE(vpipe::find_patch_sites(args(0x7f0000001000, 0x7effffffffff, 0), ranges).empty());
}

TEST(GraphPatch, TheNextFramesPlanesAreWrittenAndNothingElse) {
  const std::vector<PlaneRange> ranges{{0x7f0000000000, 4096}, {0x7f0000100000, 1024}};
  auto bytes = args(0x7f0000000100, 0x7f0000100010, 0x7f5000000000);
  const auto sites = vpipe::find_patch_sites(bytes, ranges);
  const std::vector<std::uintptr_t> next{0x7f2000000000, 0x7f2000100000};
  vpipe::apply_patch_sites(bytes, sites, next);
  EXPECT_EQ(word_at(bytes, 0), 0x7f2000000100u);
  EXPECT_EQ(word_at(bytes, 16), 0x7f2000100010u);
  EXPECT_EQ(word_at(bytes, 24), 0x7f5000000000u);  // untouched
  int w = 0;
  std::memcpy(&w, bytes.data() + 8, sizeof w);
  EXPECT_EQ(w, 1920);
  // And again, from the patched bytes: the sites carry the offsets, not the old values.
  vpipe::apply_patch_sites(bytes, sites, std::vector<std::uintptr_t>{0x10000, 0x20000});
  EXPECT_EQ(word_at(bytes, 0), 0x10100u);
  EXPECT_EQ(word_at(bytes, 16), 0x20010u);
}
