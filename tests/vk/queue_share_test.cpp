// Sharing the device's one queue with a window (vk::Device::submit_for_window): the window's submit runs
// at once when no engine work is on the queue; with engine work on several threads and a "window"
// asking in a loop, every engine submission completes (a window that stops asking never stalls the
// engine for longer than kClaimTimeout), the window gets its turns, results stay right, and the
// validation layer (whose threading checks watch the queue) stays silent. DeviceRequirements agree with
// the device the engine created.
#include <atomic>
#include <chrono>
#include <thread>

#include "ops/elementwise.h"
#include "support/testing.h"

namespace ls {
namespace {

class QueueShare : public test::GpuTest {};

TEST_F(QueueShare, WindowSubmitsAtOnceWhenTheEngineIsIdle) {
  EXPECT_FALSE(dev().engine_busy());
  VkQueue seen = VK_NULL_HANDLE;
  EXPECT_TRUE(dev().submit_for_window([&](VkQueue q) { seen = q; }));
  EXPECT_EQ(seen, dev().queue());
}

TEST_F(QueueShare, EngineThreadsAndAWindowTakeTurns) {
  const uint32_t n = 1 << 16;
  const auto values = test::random_values(n, 7);
  std::atomic<bool> done{false};
  std::atomic<int> engine_runs{0};
  auto engine = [&](float s) {
    auto x = test::tensor_from(dev(), {n}, DType::f32, values);
    auto y = Tensor::empty(dev(), {n}, DType::f32);
    vk::Recorder rec(dev());
    ops::scale_forward(rec, y, x, s);
    auto program = rec.finish();
    for (int i = 0; i < 60; ++i, ++engine_runs) program.run();
    const auto out = download(y);
    for (uint32_t i = 0; i < n; i += 997) ASSERT_EQ(out[i], values[i] * s) << i;
  };
  std::thread a(engine, 2.0f), b(engine, -3.0f);
  std::thread window([&] {
    int turns = 0, refused = 0;
    while (!done) {
      if (dev().submit_for_window([](VkQueue) {})) ++turns;
      else ++refused;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    EXPECT_GT(turns, 0) << "refused " << refused << " times";
  });
  const auto t0 = std::chrono::steady_clock::now();
  a.join();
  b.join();
  done = true;
  window.join();
  EXPECT_EQ(engine_runs.load(), 120);
  // 120 tiny programs: far below one claim timeout each, even when the window asked before every one.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 120 * vk::Device::kClaimTimeout);
}

TEST_F(QueueShare, RequirementsMatchTheDevice) {
  const vk::DeviceRequirements needs(dev().physical(), dev().report());
  EXPECT_EQ(needs.coopmat(), dev().coopmat());
  const auto* f2 = needs.features();
  EXPECT_TRUE(f2->features.shaderInt16);
  const auto* f11 = static_cast<const VkPhysicalDeviceVulkan11Features*>(f2->pNext);
  ASSERT_EQ(f11->sType, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  EXPECT_TRUE(f11->storageBuffer16BitAccess);
}

}  // namespace
}  // namespace ls
