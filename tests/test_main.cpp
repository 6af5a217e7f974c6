// The test programs' main: GoogleTest's, with a crash printing its stack first
// (a GPU test that dies on the H200 names where).
#include <gtest/gtest.h>

#include "vpipe/base/crash_trace.hpp"

int main(int argc, char** argv) {
  vpipe::install_crash_trace(argc > 0 ? argv[0] : "test");
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
