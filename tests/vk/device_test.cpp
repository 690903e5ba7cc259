// Device choice, the feature report, the pipeline cache on disk, and bindings past the device's limit.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "ops/elementwise.h"
#include "support/testing.h"

namespace ls {
namespace {

vk::DeviceReport fake(uint32_t index, const char* name, const char* type) {
  vk::DeviceReport r;
  r.index = index;
  r.name = name;
  r.type = type;
  r.api_version = VK_API_VERSION_1_3;
  r.storage16 = r.int16 = true;
  return r;
}

TEST(ChooseDevice, PrefersDiscreteThenIntegratedThenCpu) {
  std::vector<vk::DeviceReport> devs{fake(0, "llvmpipe", "cpu"), fake(1, "Intel UHD", "integrated"),
                                     fake(2, "NVIDIA H100", "discrete")};
  EXPECT_EQ(vk::choose_device(devs, ""), 2u);
  devs.pop_back();
  EXPECT_EQ(vk::choose_device(devs, ""), 1u);
  devs.pop_back();
  EXPECT_EQ(vk::choose_device(devs, ""), 0u);
}

TEST(ChooseDevice, ByNumberOrNamePart) {
  std::vector<vk::DeviceReport> devs{fake(0, "llvmpipe (LLVM 15)", "cpu"), fake(1, "NVIDIA H100 80GB", "discrete")};
  EXPECT_EQ(vk::choose_device(devs, "0"), 0u);
  EXPECT_EQ(vk::choose_device(devs, "nvidia"), 1u);
  EXPECT_EQ(vk::choose_device(devs, "LLVMPIPE"), 0u);
  try {
    vk::choose_device(devs, "radeon");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("radeon"), std::string::npos) << m;
    EXPECT_NE(m.find("NVIDIA H100"), std::string::npos) << m;  // lists what there is
  }
  EXPECT_THROW(vk::choose_device(devs, "7"), Error);
}

TEST(ChooseDevice, SkipsDevicesWithoutWhatWeNeed) {
  auto weak = fake(0, "old gpu", "discrete");
  weak.storage16 = false;
  std::vector<vk::DeviceReport> devs{weak, fake(1, "llvmpipe", "cpu")};
  EXPECT_EQ(vk::choose_device(devs, ""), 1u);
  EXPECT_THROW(vk::choose_device(devs, "0"), Error);
  EXPECT_THROW(vk::choose_device({}, ""), Error);
}

class DeviceTest : public test::GpuTest {};

TEST_F(DeviceTest, ReportNamesTheFeaturesTheEngineUses) {
  const auto& r = dev().report();
  EXPECT_FALSE(r.name.empty());
  EXPECT_TRUE(r.storage16);
  EXPECT_GE(r.subgroup_size, 1u);
  EXPECT_GE(r.shared_memory, 16u * 1024);
  EXPECT_GE(r.max_storage_range, 1u << 27);
  std::string text = vk::format_report(r);
  for (const char* key : {"float16 arithmetic", "16-bit storage", "subgroup size", "shared memory",
                          "maxStorageBufferRange", "timestamps", "VK_NV_cooperative_matrix"})
    EXPECT_NE(text.find(key), std::string::npos) << key << " missing from:\n" << text;
}

TEST_F(DeviceTest, BindingPastTheDeviceLimitIsAClearError) {
  std::vector<std::string> messages;
  vk::DeviceOptions opts;
  opts.validation = true;
  opts.on_validation_message = [&](const std::string& m) { messages.push_back(m); };
  opts.storage_range_limit = 4096;
  opts.pipeline_cache = "-";
  vk::Device small(opts);
  auto x = Tensor::empty(small, {2048}, DType::f32);  // 8 KiB: past the 4 KiB limit
  auto y = Tensor::empty(small, {2048}, DType::f32);
  vk::Recorder rec(small);
  try {
    ops::scale_forward(rec, y, x, 2.0f);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("maxStorageBufferRange"), std::string::npos) << m;
    EXPECT_NE(m.find("scale_f32"), std::string::npos) << m;
  }
  EXPECT_TRUE(messages.empty());
}

// Out of device memory (issue 18): one line saying how much was asked and for what, what lorastudio holds of
// what the device has, and where to see what to change. A device of its own without the validation layer,
// which would rightly object to an allocation larger than the heap before the driver refuses it.
TEST(DeviceMemory, OutOfMemoryIsAClearError) {
  vk::DeviceOptions opts;
  opts.pipeline_cache = "-";
  vk::Device d(opts);
  auto held = Tensor::empty(d, {1024}, DType::f32);  // something held already: one block (vk::Memory::kBlockSize)
  try {
    Tensor::empty(d, {uint32_t(1) << 31, 1u << 14}, DType::f32, "an impossible tensor");  // 128 TiB
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const char* want : {"out of GPU memory allocating 134217728 MiB for an impossible tensor", "lorastudio holds 64 MiB",
                             "of the device's", "--plan", "--quantize nf4", "--grad-checkpoint"})
      EXPECT_NE(m.find(want), std::string::npos) << want << " not in: " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

// A tensor over a quarter of a block gets a block of its own size, so two 7B MLP weights (129.5 MiB each) are
// held in ~259 MiB, not in blocks they leave half empty; smaller tensors share blocks of vk::Memory::kBlockSize.
TEST(DeviceMemory, LargeTensorsAreHeldInBlocksOfTheirOwnSize) {
  vk::DeviceOptions opts;
  opts.pipeline_cache = "-";
  vk::Device d(opts);
  const uint64_t before = d.memory().stats().device_block_bytes;
  constexpr uint64_t kMiB = 1 << 20;
  auto a = Tensor::empty(d, {uint32_t(129.5 * kMiB / 2)}, DType::f16, "weight a");
  auto b = Tensor::empty(d, {uint32_t(129.5 * kMiB / 2)}, DType::f16, "weight b");
  EXPECT_EQ(d.memory().stats().device_block_bytes - before, 2 * 130 * kMiB) << "each in 2 MiB steps of its size";
  auto small = Tensor::empty(d, {1024}, DType::f32, "small");
  auto small2 = Tensor::empty(d, {1024}, DType::f32, "small 2");
  EXPECT_LE(d.memory().stats().device_block_bytes - before, 2 * 130 * kMiB + vk::Memory::kBlockSize)
      << "small tensors go to the block's slack or one shared block";
}

TEST_F(DeviceTest, PipelineCacheIsWrittenToDisk) {
  auto dir = std::filesystem::temp_directory_path() / ("ls-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto file = dir / "pipelines.bin";
  {
    vk::DeviceOptions opts;
    opts.validation = true;
    opts.pipeline_cache = file.string();
    vk::Device d(opts);
    auto x = test::tensor_from(d, {64}, DType::f32, test::random_values(64, 1));
    auto y = Tensor::empty(d, {64}, DType::f32);
    test::run(d, [&](vk::Recorder& rec) { ops::scale_forward(rec, y, x, 3.0f); });
    EXPECT_EQ(d.pipelines().created(), 1u);
  }
  ASSERT_TRUE(std::filesystem::exists(file));
  EXPECT_GT(std::filesystem::file_size(file), 0u);
  {
    // A second device reads it back (and a corrupt cache file is ignored, not fatal).
    vk::DeviceOptions opts;
    opts.pipeline_cache = file.string();
    vk::Device d(opts);
  }
  { std::ofstream(file) << "not a pipeline cache"; }
  {
    vk::DeviceOptions opts;
    opts.pipeline_cache = file.string();
    vk::Device d(opts);
    auto x = test::tensor_from(d, {64}, DType::f32, test::random_values(64, 1));
    auto y = Tensor::empty(d, {64}, DType::f32);
    test::run(d, [&](vk::Recorder& rec) { ops::scale_forward(rec, y, x, 3.0f); });
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ls
