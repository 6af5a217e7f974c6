// The CUDA toolchain end to end: a kernel built by nvcc runs on the device,
// writes a pattern, and the host reads back exactly that. Skips, with the
// reason, where no device exists (the development machines and CI).
#include <gtest/gtest.h>

#include <vector>

#include "vpipe/base/errors.hpp"
#include "vpipe/memory/cuda_device.hpp"
#include "vpipe/memory/device_resource.hpp"

namespace {

__global__ void fill_pattern(unsigned* out, unsigned n, unsigned seed) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i * 2654435761u ^ seed;
}

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto reason = vpipe::cuda_unavailable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  }
};

}  // namespace

TEST_F(Gpu, KernelWritesPatternThroughNaiveResource) {
  vpipe::NaiveResource mr;
  const unsigned n = 1u << 20;
  cudaStream_t stream{};
  VPIPE_CUDA_TRY(cudaStreamCreate(&stream));
  auto* d = static_cast<unsigned*>(mr.allocate(n * sizeof(unsigned), stream));
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(d) % vpipe::DeviceMemoryResource::kAlignment, 0u);
  fill_pattern<<<(n + 255) / 256, 256, 0, stream>>>(d, n, 0x5eedu);
  VPIPE_CUDA_TRY(cudaGetLastError());
  std::vector<unsigned> host(n, 0);
  VPIPE_CUDA_TRY(
      cudaMemcpyAsync(host.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  VPIPE_CUDA_TRY(cudaStreamSynchronize(stream));
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(host[i], (i * 2654435761u) ^ 0x5eedu) << i;
  mr.deallocate(d, n * sizeof(unsigned), stream);
  cudaStreamDestroy(stream);
}

TEST_F(Gpu, QueryReportsTheDevice) {
  const auto info = vpipe::query_cuda_system();
  ASSERT_FALSE(info.devices.empty());
  EXPECT_GT(info.devices[0].total_memory, 0u);
  EXPECT_GE(info.devices[0].cc_major, 7);
  EXPECT_GT(info.driver_version, 0);
}
