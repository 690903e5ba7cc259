// Device choice, the feature report, the pipeline cache on disk, and bindings past the device's limit.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
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

// A GPU offering f16 × f16 → f32 16×16×16 matrices at subgroup scope through either extension, or both.
vk::DeviceReport tensor_core_gpu(bool nv, bool khr, uint32_t subgroup_size) {
  auto r = fake(0, "gpu", "discrete");
  r.float16 = r.memory_model = true;
  r.subgroup_size = subgroup_size;
  const vk::CoopMatShape shape{16, 16, 16, "f16", "f16", "f32", "f32"};
  r.coopmat_nv = nv;
  if (nv) r.coopmat_shapes = {{16, 16, 16, "f16", "f16", "f16", "f16"}, shape};
  r.coopmat_khr = khr;
  if (khr) r.coopmat_khr_shapes = {shape};
  return r;
}

TEST(ChooseCoopmat, NvWhereOfferedKhrWhenAskedOrByDefault) {
  using vk::CoopmatApi;
  const vk::CoopmatChoice none{}, nv{.api = CoopmatApi::nv}, khr{.api = CoopmatApi::khr};
  const auto both = tensor_core_gpu(true, true, 32);
  EXPECT_EQ(vk::choose_coopmat(both, "", true), nv);
  EXPECT_EQ(vk::choose_coopmat(both, "nv", true), nv);
  EXPECT_EQ(vk::choose_coopmat(both, "khr", true), khr);  // to test and measure the KHR kernels on NVIDIA
  EXPECT_EQ(vk::choose_coopmat(both, "khr", false), nv);  // not built (no glslang >= 14)
  const auto khr_only = tensor_core_gpu(false, true, 32);
  EXPECT_EQ(vk::choose_coopmat(khr_only, "", true), vk::kKhrCoopmatByDefault ? khr : none);
  EXPECT_EQ(vk::choose_coopmat(khr_only, "khr", true), khr);
  EXPECT_EQ(vk::choose_coopmat(khr_only, "nv", true), none);
  auto old_vulkan = khr_only;
  old_vulkan.api_version = VK_API_VERSION_1_2;  // the KHR kernels are SPIR-V 1.6
  EXPECT_EQ(vk::choose_coopmat(old_vulkan, "khr", true), none);
  auto no_f16 = both;
  no_f16.float16 = false;
  EXPECT_EQ(vk::choose_coopmat(no_f16, "khr", true), none);
  EXPECT_EQ(vk::choose_coopmat(no_f16, "", true), none);
  try {
    vk::choose_coopmat(both, "amd", true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LORASTUDIO_COOPMAT must be nv or khr, not 'amd'"), std::string::npos)
        << e.what();
  }
}

TEST(ChooseCoopmat, ShapesAndSubgroupSizes) {
  using vk::CoopmatApi;
  // lavapipe's KHR matrices (Mesa 25+) are 8×8 on subgroups of 8: none of ours fit.
  auto small = tensor_core_gpu(false, true, 8);
  small.coopmat_khr_shapes = {{8, 8, 8, "f16", "f16", "f32", "f32"}};
  EXPECT_EQ(vk::choose_coopmat(small, "khr", true).api, CoopmatApi::none);
  // f16 accumulators only: no.
  auto f16_acc = tensor_core_gpu(false, true, 32);
  f16_acc.coopmat_khr_shapes = {{16, 16, 16, "f16", "f16", "f16", "f16"}};
  EXPECT_EQ(vk::choose_coopmat(f16_acc, "khr", true).api, CoopmatApi::none);
  // Subgroups of 64 by default (AMD): the KHR kernels run where a pipeline may require 32.
  auto wave64 = tensor_core_gpu(false, true, 64);
  EXPECT_EQ(vk::choose_coopmat(wave64, "khr", true).api, CoopmatApi::none);
  wave64.subgroup_size_control = true;
  wave64.min_subgroup_size = 32;
  wave64.max_subgroup_size = 64;
  EXPECT_EQ(vk::choose_coopmat(wave64, "khr", true),
            (vk::CoopmatChoice{.api = CoopmatApi::khr, .require_subgroup_32 = true}));
  wave64.min_subgroup_size = 64;
  EXPECT_EQ(vk::choose_coopmat(wave64, "khr", true).api, CoopmatApi::none);
  // The NV kernels need subgroups of 32 as they come.
  EXPECT_EQ(vk::choose_coopmat(tensor_core_gpu(true, false, 64), "", true).api, CoopmatApi::none);
}

TEST(ChooseCoopmat, DescribedForDevices) {
  using vk::CoopmatApi;
  EXPECT_EQ(vk::describe({}), "none (the scalar kernels)");
  EXPECT_EQ(vk::describe({.subgroup = {.api = CoopmatApi::nv}, .cm2 = true}),
            "VK_NV_cooperative_matrix2's GEMM and flash attention, else VK_NV_cooperative_matrix (16x16x16 f16, "
            "subgroups of 32)");
  EXPECT_EQ(vk::describe({.subgroup = {.api = CoopmatApi::khr, .require_subgroup_32 = true}}),
            "VK_KHR_cooperative_matrix (16x16x16 f16, subgroups of 32, required by each pipeline)");
}

// The cooperative-matrix-2 kernels run only where the device offers what they use, maintenance4 included (they are
// SPIR-V 1.6 with their workgroup size from specialization constants: LocalSizeId, which needs it enabled).
TEST(TensorCores, CooperativeMatrix2NeedsMaintenance4) {
  if (std::getenv("LORASTUDIO_NO_COOPMAT2") || std::getenv("LORASTUDIO_NO_COOPMAT") || std::getenv("LORASTUDIO_COOPMAT"))
    GTEST_SKIP() << "a LORASTUDIO_*COOPMAT* switch is set";
  auto r = tensor_core_gpu(true, false, 32);
  r.coopmat2 = r.buffer_device_address = r.maintenance4 = true;
  EXPECT_EQ(vk::tensor_cores_for(r).cm2, vk::kernel_built(vk::Kernel::gemm_cm2_m_f16_f16_f32));  // built with glslang >= 14
  r.maintenance4 = false;
  EXPECT_FALSE(vk::tensor_cores_for(r).cm2);
  EXPECT_EQ(vk::tensor_cores_for(r).subgroup.api, vk::CoopmatApi::nv);  // the subgroup-scope kernels stay
  r.maintenance4 = true;
  r.buffer_device_address = false;
  EXPECT_FALSE(vk::tensor_cores_for(r).cm2);
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
                          "maxStorageBufferRange", "timestamps", "VK_NV_cooperative_matrix",
                          "VK_KHR_cooperative_matrix"})
    EXPECT_NE(text.find(key), std::string::npos) << key << " missing from:\n" << text;
}

// vk::Pipelines::registers: nothing without VK_KHR_pipeline_executable_properties (lavapipe); with it, the count of a
// pipeline created earlier without its statistics (read from a second pipeline made to keep them: the first may not
// be asked, a validation error) and of one it creates itself (cached, so a later get() creates nothing), the same
// answer when asked again, and on NVIDIA's driver a count an invocation can have.
TEST_F(DeviceTest, PipelineRegistersOfCachedAndNewPipelines) {
  auto& pipelines = dev().pipelines();
  const vk::Kernel kernel = vk::Kernel::fill_zero_u32;
  const vk::Spec plain_first{.local_x = 96}, asked_first{.local_x = 160};
  const VkPipeline plain = pipelines.get(kernel, plain_first);
  const size_t created = pipelines.created();
  const std::optional<uint32_t> of_plain = pipelines.registers(kernel, plain_first);
  EXPECT_EQ(pipelines.created(), created) << "the statistics' own pipeline is not cached";
  EXPECT_EQ(pipelines.get(kernel, plain_first), plain);
  const std::optional<uint32_t> of_asked = pipelines.registers(kernel, asked_first);
  if (!dev().executable_info()) {
    EXPECT_FALSE(of_plain.has_value());
    EXPECT_FALSE(of_asked.has_value());
    return;
  }
  EXPECT_EQ(pipelines.created(), created + 1) << "registers() creates and caches a pipeline that did not exist";
  pipelines.get(kernel, asked_first);
  EXPECT_EQ(pipelines.created(), created + 1);
  EXPECT_EQ(pipelines.registers(kernel, plain_first), of_plain);
  EXPECT_EQ(pipelines.registers(kernel, asked_first), of_asked);
  if (dev().report().name.find("NVIDIA") != std::string::npos) {
    ASSERT_TRUE(of_plain.has_value() && of_asked.has_value()) << "NVIDIA's driver reports a Register Count";
    for (uint32_t n : {*of_plain, *of_asked}) {
      EXPECT_GE(n, 1u);
      EXPECT_LE(n, 255u);
    }
  }
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
