// The push-constant blocks read from the kernels' SPIR-V (vk/push_block.h): every built kernel's block is
// read (scalars, vectors, arrays, structs), its offsets ascend and it fits the shared layout; the C++
// Params structs visible from a header have the offsets and size of their GLSL block (offsetof, sizeof);
// a dispatch whose Params struct is not the kernel's block size, or whose members do not put the block's scalars
// at their offsets with their types, is refused, naming the kernel and what differs.
// That refusal is what checks the structs kept inside their op's .cpp file (GemmParams for every gemm/matvec
// variant, FlashParams, DequantParams, ...): every op test that dispatches a kernel checks its struct's size and
// its members' offsets and types (vk/params_layout.h reads them).
#include "vk/push_block.h"

#include <cstddef>
#include <map>
#include <string>

#include "error.h"
#include "model/model_files.h"  // throws_error
#include "ops/attention_group_sum.h"
#include "ops/norms_params.h"
#include "support/testing.h"
#include "vk/pipelines.h"

namespace ls {
namespace {

TEST(PushBlock, EveryBuiltKernelsBlockIsRead) {
  size_t with_block = 0;
  for (uint32_t k = 0; k < uint32_t(vk::Kernel::count_); ++k) {
    const auto kernel = vk::Kernel(k);
    if (!vk::kernel_built(kernel)) continue;
    SCOPED_TRACE(vk::kernel_info(kernel).name);
    const vk::PushBlock& b = vk::push_block(kernel);
    EXPECT_LE(b.size, vk::kMaxPushBytes);
    for (size_t i = 1; i < b.offsets.size(); ++i) EXPECT_GT(b.offsets[i], b.offsets[i - 1]);
    if (!b.offsets.empty()) {
      EXPECT_GT(b.size, b.offsets.back());
    }
    with_block += b.size > 0;
  }
  EXPECT_GT(with_block, 20u);
}

// The GL_KHR_cooperative_matrix rows of the tensor-core kernels (common/coopmat_api.glsl) are the NV rows spelled
// for the other extension: each has its NV twin (the name without "_khr"), built alike, with the same block, so
// the ops dispatch either with one Params struct.
TEST(PushBlock, KhrCoopmatKernelsMirrorTheirNvRows) {
  std::map<std::string, vk::Kernel> by_name;
  for (uint32_t k = 0; k < uint32_t(vk::Kernel::count_); ++k)
    by_name[vk::kernel_info(vk::Kernel(k)).name] = vk::Kernel(k);
  size_t twins = 0;
  for (const auto& [name, kernel] : by_name) {
    const size_t at = name.find("_khr");
    if (name.find("coopmat") == std::string::npos || at == std::string::npos) continue;
    SCOPED_TRACE(name);
    const auto nv = by_name.find(name.substr(0, at) + name.substr(at + 4));
    ASSERT_NE(nv, by_name.end());
    ++twins;
    if (!vk::kernel_built(kernel)) continue;  // no glslang >= 14
    const vk::PushBlock &a = vk::push_block(kernel), &b = vk::push_block(nv->second);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.offsets, b.offsets);
    EXPECT_EQ(a.scalars, b.scalars);
  }
  EXPECT_EQ(twins, 32u);  // 24 GEMM rows (12 dtypes × two tiles), 8 flash attention rows (4 kernels × two head dims)
}

TEST(PushBlock, NotSpirvIsNamed) {
  const uint32_t words[] = {1, 2, 3, 4, 5};
  EXPECT_THROW(vk::push_block(words, "junk"), Error);
}

// offsetof of each member of P, in declaration order, against the kernel's block.
template <class P>
void expect_mirrors(vk::Kernel kernel, const std::vector<uint32_t>& cpp_offsets) {
  SCOPED_TRACE(vk::kernel_info(kernel).name);
  const vk::PushBlock& b = vk::push_block(kernel);
  EXPECT_EQ(b.offsets, cpp_offsets);
  EXPECT_EQ(b.size, sizeof(P));
}

TEST(PushBlock, HeaderParamsMirrorTheirBlocks) {
  using ops::detail::GroupSumParams;
  expect_mirrors<GroupSumParams>(
      vk::Kernel::attention_group_sum,
      {offsetof(GroupSumParams, total), offsetof(GroupSumParams, T), offsetof(GroupSumParams, KV),
       offsetof(GroupSumParams, D), offsetof(GroupSumParams, G), offsetof(GroupSumParams, slices)});
  using ops::detail::NormBackwardParams;
  using ops::detail::NormParams;
  const std::vector<uint32_t> norm{offsetof(NormParams, rows), offsetof(NormParams, cols), offsetof(NormParams, eps)};
  const std::vector<uint32_t> norm_backward{offsetof(NormBackwardParams, rows), offsetof(NormBackwardParams, cols)};
  for (vk::Kernel k : {vk::Kernel::rms_norm_f32_f32, vk::Kernel::rms_norm_f16_bf16, vk::Kernel::layer_norm_f32_f32,
                       vk::Kernel::layer_norm_f16_f16})
    expect_mirrors<NormParams>(k, norm);
  for (vk::Kernel k : {vk::Kernel::rms_norm_backward_f32_f32, vk::Kernel::rms_norm_backward_dw,
                       vk::Kernel::layer_norm_backward_f32_bf16, vk::Kernel::layer_norm_backward_dw_db})
    expect_mirrors<NormBackwardParams>(k, norm_backward);
}

class PushBlockDispatch : public test::GpuTest {};

TEST_F(PushBlockDispatch, ParamsOfAnotherSizeAreRefused) {
  vk::Recorder rec(dev());
  const uint32_t too_small = 1;
  try {
    rec.dispatch(vk::Kernel::attention_group_sum, {}, too_small, {1, 1, 1});
    FAIL() << "a 4-byte Params for a 24-byte block was recorded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("attention_group_sum"), std::string::npos) << what;
    EXPECT_NE(what.find("is 4 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("block 24"), std::string::npos) << what;
  }
}

// The same size, another layout: a float where the block has a uint, and a struct of the right size whose
// members are all uints where the block has a float. Both refused, naming the kernel, the byte and both types.
TEST_F(PushBlockDispatch, ParamsOfAnotherLayoutAreRefused) {
  vk::Recorder rec(dev());
  struct FloatInTheMiddle {
    uint32_t total;
    float T;
    uint32_t KV, D, G, slices;
  };
  EXPECT_TRUE(test::throws_error([&] { rec.dispatch(vk::Kernel::attention_group_sum, {}, FloatInTheMiddle{}, {1, 1, 1}); },
                                 {"attention_group_sum", "has a uint at byte 4", "Params struct a float"}));
  struct NoFloat {
    uint32_t rows, cols, eps;
  };
  static_assert(sizeof(NoFloat) == sizeof(ops::detail::NormParams));
  EXPECT_TRUE(test::throws_error([&] { rec.dispatch(vk::Kernel::rms_norm_f32_f32, {}, NoFloat{}, {1, 1, 1}); },
                                 {"rms_norm_f32_f32", "has a float at byte 8", "Params struct a uint"}));
}

}  // namespace
}  // namespace ls
