// Linear layers and LoRA against double-accumulating references. Inputs are rounded to their storage
// type before the reference sees them, so only accumulation order and output rounding differ.
// Tolerance (rel, see test::expect_close): f32 output 1e-5, f16 output 2e-3.
#include "ops/matmul.h"

#include <array>
#include <cstdlib>
#include <cmath>

#include "ops/activations.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/rope.h"
#include "ops/matmul_detail.h"
#include "support/testing.h"

namespace ls {
namespace {

struct Case {
  uint32_t M, N, K;
  DType x, w, y;
};
std::ostream& operator<<(std::ostream& o, const Case& c) {
  return o << c.M << "x" << c.N << "x" << c.K << "_" << dtype_name(c.x) << "_" << dtype_name(c.w) << "_" << dtype_name(c.y);
}

double tol(DType out) { return out == DType::f32 ? 1e-5 : 2e-3; }
// On tensor cores (a device with them and f16/bf16 weights; the matrix-vector kernel of M <= 4 is
// exact but held to the same bound) f32 activations are rounded to f16 on their way in: a half's
// relative precision, 2^-11.
constexpr double kTensorCoreTol = 3e-3;
double tol(vk::Device& d, uint32_t /*M*/, DType w, DType out) {
  return d.coopmat() && w != DType::f32 ? std::max(tol(out), kTensorCoreTol) : tol(out);
}

class MatmulTest : public test::GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(MatmulTest, ForwardWithBiasMatchesReference) {
  const Case c = GetParam();
  auto x0 = test::rounded(test::random_values(size_t(c.M) * c.K, 1), c.x);
  auto w0 = test::rounded(test::random_values(size_t(c.N) * c.K, 2), c.w);
  auto b0 = test::rounded(test::random_values(c.N, 3), c.w);
  auto x = test::tensor_from(dev(), {c.M, c.K}, c.x, x0);
  auto w = test::tensor_from(dev(), {c.N, c.K}, c.w, w0);
  auto b = test::tensor_from(dev(), {c.N}, c.w, b0);
  auto y = test::poisoned(dev(), {c.M, c.N}, c.y);
  test::run(dev(), [&](vk::Recorder& rec) { ops::matmul_forward(rec, y.t, x, w, b); });
  std::vector<float> want(size_t(c.M) * c.N);
  ops::ref::matmul_forward(want, x0, w0, b0, c.M, c.N, c.K);
  test::expect_close(download(y.t), test::rounded(want, c.y), tol(dev(), c.M, c.w, c.y), "matmul_forward", y.t.shape());
  y.expect_guards_intact("matmul_forward");

  // With accumulate, y += x·Wᵀ + b (inference's residual adds folded into the o and down products).
  const auto y0 = test::rounded(test::random_values(size_t(c.M) * c.N, 8), c.y);
  auto y_acc = test::tensor_from(dev(), {c.M, c.N}, c.y, y0);
  test::run(dev(), [&](vk::Recorder& rec) { ops::matmul_forward(rec, y_acc, x, w, b, true); });
  for (size_t i = 0; i < want.size(); ++i) want[i] += y0[i];
  test::expect_close(download(y_acc), test::rounded(want, c.y), tol(dev(), c.M, c.w, c.y), "matmul_forward accumulating",
                     y_acc.shape());
}

TEST_P(MatmulTest, ForwardWithoutBiasAndBackwardX) {
  const Case c = GetParam();
  auto x0 = test::rounded(test::random_values(size_t(c.M) * c.K, 4), c.x);
  auto w0 = test::rounded(test::random_values(size_t(c.N) * c.K, 5), c.w);
  auto dy0 = test::rounded(test::random_values(size_t(c.M) * c.N, 6), c.x);
  auto x = test::tensor_from(dev(), {c.M, c.K}, c.x, x0);
  auto w = test::tensor_from(dev(), {c.N, c.K}, c.w, w0);
  auto dy = test::tensor_from(dev(), {c.M, c.N}, c.x, dy0);
  auto y = test::poisoned(dev(), {c.M, c.N}, c.y);
  auto dx = test::poisoned(dev(), {c.M, c.K}, c.y);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::matmul_forward(rec, y.t, x, w, Tensor());
    ops::matmul_backward_x(rec, dx.t, dy, w);
  });
  std::vector<float> want_y(size_t(c.M) * c.N), want_dx(size_t(c.M) * c.K);
  ops::ref::matmul_forward(want_y, x0, w0, {}, c.M, c.N, c.K);
  ops::ref::matmul_backward_x(want_dx, dy0, w0, c.M, c.N, c.K);
  test::expect_close(download(y.t), test::rounded(want_y, c.y), tol(dev(), c.M, c.w, c.y), "matmul_forward", y.t.shape());
  test::expect_close(download(dx.t), test::rounded(want_dx, c.y), tol(dev(), c.M, c.w, c.y), "matmul_backward_x",
                     dx.t.shape());
  dx.expect_guards_intact("matmul_backward_x");
}

TEST_P(MatmulTest, BackwardWAccumulates) {
  const Case c = GetParam();
  auto x0 = test::rounded(test::random_values(size_t(c.M) * c.K, 7), c.x);
  auto dy0 = test::rounded(test::random_values(size_t(c.M) * c.N, 8), c.x);
  auto dw0 = test::random_values(size_t(c.N) * c.K, 9);
  auto x = test::tensor_from(dev(), {c.M, c.K}, c.x, x0);
  auto dy = test::tensor_from(dev(), {c.M, c.N}, c.x, dy0);
  auto dw = test::tensor_from(dev(), {c.N, c.K}, DType::f32, dw0);
  test::run(dev(), [&](vk::Recorder& rec) { ops::matmul_backward_w(rec, dw, dy, x, 0.5f); });
  auto want = dw0;
  ops::ref::matmul_backward_w(want, dy0, x0, c.M, c.N, c.K, 0.5f);
  test::expect_close(download(dw), want, 1e-5, "matmul_backward_w", dw.shape());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulTest,
    ::testing::Values(Case{1, 1, 1, DType::f32, DType::f32, DType::f32}, Case{7, 33, 129, DType::f32, DType::f32, DType::f32},
                      Case{33, 7, 64, DType::f32, DType::bf16, DType::f32}, Case{129, 65, 33, DType::f16, DType::f16, DType::f16},
                      Case{17, 129, 7, DType::f16, DType::bf16, DType::f32}, Case{65, 64, 100, DType::f32, DType::f16, DType::f16},
                      Case{1, 896, 896, DType::f32, DType::bf16, DType::f32},
                      // few rows (matvec kernels): 16-byte loads when K % 8 == 0, element by element otherwise
                      Case{3, 40, 136, DType::f16, DType::f16, DType::f16}, Case{4, 37, 64, DType::f16, DType::bf16, DType::f32},
                      Case{2, 9, 24, DType::f32, DType::f32, DType::f16}, Case{1, 300, 8, DType::f16, DType::bf16, DType::f16},
                      Case{2, 5, 12, DType::f16, DType::f16, DType::f32},
                      // ... with a column split over 2 to 8 subgroups (shaders/matvec8.comp kSplit), K past the last
                      // split's pieces
                      Case{4, 37, 1000, DType::f16, DType::bf16, DType::f32}, Case{1, 33, 4864, DType::f32, DType::f16, DType::f32},
                      Case{64, 4864, 896, DType::f16, DType::bf16, DType::f16},
                      // Few output tiles and a long K: split-K (partial sums, then an ordered reduction).
                      Case{40, 72, 4096, DType::f32, DType::f32, DType::f32}, Case{70, 136, 2048, DType::f16, DType::bf16, DType::f32},
                      // One side of at most 16, f32 (shaders/matmul_skinny.comp, LoRA's shapes): a subgroup per
                      // row along K, and (backward_x, W read down its columns) an invocation per row with K split.
                      Case{300, 8, 896, DType::f32, DType::f32, DType::f32}, Case{16, 520, 384, DType::f32, DType::f32, DType::f32},
                      Case{9, 130, 77, DType::f32, DType::f32, DType::f32},
                      // other short sides (the kernel's specialization constant) and K not a multiple of 4
                      Case{200, 3, 130, DType::f32, DType::f32, DType::f32}, Case{5, 150, 66, DType::f32, DType::f32, DType::f32},
                      // several long indices a workgroup (2 from 512, 4 from 1024), the last group partly past L
                      Case{1027, 8, 96, DType::f32, DType::f32, DType::f32}, Case{5, 601, 64, DType::f32, DType::f32, DType::f32},
                      // A short reduction, f32 (shaders/matmul_short_k.comp: LoRA's K = rank products)
                      Case{300, 520, 8, DType::f32, DType::f32, DType::f32}, Case{70, 90, 64, DType::f32, DType::f32, DType::f32},
                      // f16 × f16, M and N multiples of 128 with at least 128 tiles of 128×128: on tensor cores the
                      // big tile, which stores straight to C (the forward; its backward_x has too few tiles for it).
                      Case{1024, 2048, 96, DType::f16, DType::f16, DType::f16},
                      Case{2048, 1024, 64, DType::f16, DType::f16, DType::f32},
                      // 8-aligned rows with f16 weights: on a device that has VK_NV_cooperative_matrix2, the
                      // workgroup-scope kernel (f32 activations converted to f16 first, edge tiles, K not a multiple of its K step, the bias through the element-wise
                      // epilogue, split-K with few tiles and K 4096); elsewhere the other paths at these shapes
                      Case{200, 264, 136, DType::f32, DType::f16, DType::f32},
                      Case{520, 904, 896, DType::f32, DType::f16, DType::f16},
                      Case{264, 136, 40, DType::f16, DType::f16, DType::f32},
                      Case{72, 96, 4096, DType::f16, DType::f16, DType::f16},
                      Case{48, 64, 4096, DType::f32, DType::f16, DType::f32},
                      // ... and its unclamped path: tiles wholly inside C, K a multiple of its step of 64 (the loop
                      // unrolled), each of its tiles (128×128 and, above 512 rows, 256×128, then 64×64 for few tiles
                      // and a short K), split-K with equal slices (16 of 256) and with a shorter last one (backward_x
                      // of the first two: 7 slices of 320 and one of 256).
                      Case{512, 2176, 576, DType::f16, DType::f16, DType::f32},
                      Case{1024, 2176, 128, DType::f32, DType::f16, DType::f16},
                      Case{64, 128, 192, DType::f16, DType::f16, DType::f16},
                      Case{256, 256, 4096, DType::f32, DType::f16, DType::f32},
                      // split-K into slices of 384 with a last one of 232 (its K tail clamped); a reduction past
                      // 4,864 (the lm_head's dx), its slices by waves: five, four of 1,216 and one of 1,136
                      Case{64, 128, 1000, DType::f32, DType::f16, DType::f32},
                      Case{64, 128, 6000, DType::f32, DType::f16, DType::f32},
                      // a few rows (batched generation): the 16-row tile, K in slices of about 512 (two of 512 and
                      // 488, the tail clamped; four of 512 over two row tiles, the second half past M)
                      Case{16, 264, 1000, DType::f16, DType::f16, DType::f16},
                      Case{24, 136, 2048, DType::f32, DType::f16, DType::f32}),
    [](const auto& param_info) {
      std::ostringstream o;
      o << param_info.param;
      return o.str();
    });

// The big tile's epilogue with accumulation (dx += dy·W, as the backward of two projections that read
// the same input does), into f32 and f16 outputs.
class MatmulBigTileTest : public test::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(MatmulBigTileTest, BackwardXAccumulates) {
  const DType out = GetParam();
  const uint32_t M = 1024, N = 64, K = 2048;  // dx [M, K]: 8×16 tiles of 128×128
  auto dy0 = test::rounded(test::random_values(size_t(M) * N, 21), DType::f16);
  auto w0 = test::rounded(test::random_values(size_t(N) * K, 22), DType::f16);
  auto dx0 = test::rounded(test::random_values(size_t(M) * K, 23), out);
  auto dy = test::tensor_from(dev(), {M, N}, DType::f16, dy0);
  auto w = test::tensor_from(dev(), {N, K}, DType::f16, w0);
  auto dx = test::tensor_from(dev(), {M, K}, out, dx0);
  test::run(dev(), [&](vk::Recorder& rec) { ops::matmul_backward_x(rec, dx, dy, w, true); });
  std::vector<float> want(size_t(M) * K);
  ops::ref::matmul_backward_x(want, dy0, w0, M, N, K);
  for (size_t i = 0; i < want.size(); ++i) want[i] += dx0[i];
  test::expect_close(download(dx), test::rounded(want, out), tol(dev(), M, DType::f16, out), "matmul_backward_x",
                     dx.shape());
}

INSTANTIATE_TEST_SUITE_P(Outputs, MatmulBigTileTest, ::testing::Values(DType::f32, DType::f16),
                         [](const auto& param_info) { return std::string(dtype_name(param_info.param)); });

class MatmulBatchedTest : public test::GpuTest {};

TEST_F(MatmulBatchedTest, EachBatchIsItsOwnProduct) {
  const uint32_t Z = 3, M = 17, N = 9, K = 33;
  auto x0 = test::random_values(size_t(Z) * M * K, 10);
  auto w0 = test::rounded(test::random_values(size_t(Z) * N * K, 11), DType::f16);
  auto x = test::tensor_from(dev(), {Z, M, K}, DType::f32, x0);
  auto w = test::tensor_from(dev(), {Z, N, K}, DType::f16, w0);
  auto y = test::poisoned(dev(), {Z, M, N}, DType::f32);
  const ops::StridedProduct s{.M = M, .N = N, .K = K, .batch = Z, .z_div = Z, .a_sm = K, .a_sk = 1, .b_sn = K,
                              .b_sk = 1, .c_sm = N, .a_sz = M * K, .b_sz = N * K, .c_sz = M * N};
  test::run(dev(), [&](vk::Recorder& rec) { ops::matmul_strided(rec, y.t, x, w, s); });
  std::vector<float> want(size_t(Z) * M * N);
  for (uint32_t z = 0; z < Z; ++z)
    ops::ref::matmul_forward(std::span(want).subspan(size_t(z) * M * N, size_t(M) * N),
                             std::span<const float>(x0).subspan(size_t(z) * M * K, size_t(M) * K),
                             std::span<const float>(w0).subspan(size_t(z) * N * K, size_t(N) * K), {}, M, N, K);
  test::expect_close(download(y.t), want, tol(dev(), M, DType::f16, DType::f32), "matmul_strided", y.t.shape());
  y.expect_guards_intact("matmul_strided");
}

// A product's partial sums left unreduced (ops::matmul_forward_unreduced, matmul_backward_x_unreduced, for an op that
// adds them up as it reads them): where it splits the reduction, its slices, added up as its reduce adds them (each
// lane's slices in order, then the lanes in a tree), are the bits matmul_forward / matmul_backward_x write; where it
// does not split, or with LORASTUDIO_SPLIT_INTO_NORM=0, it returns none and writes its output as they do. On lavapipe's
// shader-core path a reduction of 512 over 24 rows and 40 outputs splits (4 slices), one of 64 does not.
class MatmulUnreducedTest : public test::GpuTest {};

TEST_F(MatmulUnreducedTest, SlicesAddUpToTheReducedProduct) {
  struct Product {
    uint32_t M, N, K;
    bool backward, splits_on_shader_cores;
  };
  for (const Product& c : {Product{24, 40, 512, false, true}, Product{24, 512, 40, true, true},
                           Product{24, 40, 64, false, false}})
    for (bool off : {false, true}) {
      const uint32_t out_cols = c.backward ? c.K : c.N, in_cols = c.backward ? c.N : c.K;
      const std::string what = std::string(c.backward ? "backward_x " : "forward ") + std::to_string(c.M) + "x" +
                               std::to_string(c.N) + "x" + std::to_string(c.K) + (off ? " (switched off)" : "");
      auto in = test::tensor_from(dev(), {c.M, in_cols}, DType::f32, test::random_values(size_t(c.M) * in_cols, 70));
      auto w = test::tensor_from(dev(), {c.N, c.K}, DType::f32, test::random_values(size_t(c.N) * c.K, 71));
      auto want = test::poisoned(dev(), {c.M, out_cols}, DType::f32), got = test::poisoned(dev(), {c.M, out_cols}, DType::f32);
      if (off) setenv("LORASTUDIO_SPLIT_INTO_NORM", "0", 1);
      ops::SplitSums sums;
      test::run(dev(), [&](vk::Recorder& rec) {
        if (c.backward) {
          ops::matmul_backward_x(rec, want.t, in, w);
          sums = ops::matmul_backward_x_unreduced(rec, got.t, in, w);
        } else {
          ops::matmul_forward(rec, want.t, in, w, Tensor());
          sums = ops::matmul_forward_unreduced(rec, got.t, in, w);
        }
        if (sums.defined()) {  // read before the recording ends: the scratch is the recording's
          auto copy = Tensor::empty(dev(), sums.partial.shape(), DType::f32, "partial sums");
          ops::scale_forward(rec, copy, sums.partial, 1.0f);
          sums.partial = copy;
        }
      });
      unsetenv("LORASTUDIO_SPLIT_INTO_NORM");
      const std::vector<float> reduced = download(want.t);
      if (!sums.defined()) {
        EXPECT_FALSE(!off && c.splits_on_shader_cores && !dev().coopmat()) << what << ": no partial sums";
        EXPECT_EQ(download(got.t), reduced) << what;
        continue;
      }
      EXPECT_FALSE(off) << what;
      ASSERT_GT(sums.splits, 1u) << what;
      const std::vector<float> parts = download(sums.partial);
      const size_t n = reduced.size();
      ASSERT_EQ(parts.size(), n * sums.splits) << what;
      std::vector<float> added(n);
      for (size_t i = 0; i < n; ++i) {
        std::vector<float> lane(sums.lanes, 0.0f);
        for (uint32_t l = 0; l < sums.lanes; ++l)
          for (uint32_t s = l; s < sums.splits; s += sums.lanes) lane[l] += parts[s * n + i];
        for (uint32_t h = sums.lanes / 2; h > 0; h /= 2)
          for (uint32_t l = 0; l < h; ++l) lane[l] += lane[l + h];
        added[i] = lane[0];
      }
      EXPECT_EQ(added, reduced) << what << ": " << sums.splits << " slices in " << sums.lanes << " lanes";
      got.expect_guards_intact(what.c_str());
    }
}

// Split products whose slices add up their partial sums themselves (on a device with VK_NV_cooperative_matrix2: the
// tile's last slice to finish, counting in vk::Recorder::tile_counters; elsewhere a reduce dispatch): one program
// run five times gives the same bits each time (the counters are back at zero after every run), and four products
// recorded one after another, with nothing between them to wait for, each equal their reference (the 0.5B shape's
// q, o, k and v dx at 512 rows, with accumulation into an f32 output and into an f16 one).
class MatmulSplitReplayTest : public test::GpuTest {};

TEST_F(MatmulSplitReplayTest, EveryRunOfAProgramSumsTheSlicesAlike) {
  const uint32_t M = 512, K = 896;
  const std::array<uint32_t, 4> Ns = {896, 896, 128, 128};
  std::vector<Tensor> dys, ws, dxs;
  std::vector<std::vector<float>> want(Ns.size());
  for (size_t i = 0; i < Ns.size(); ++i) {
    const uint32_t N = Ns[i];
    const DType out = i % 2 ? DType::f16 : DType::f32;
    auto dy0 = test::rounded(test::random_values(size_t(M) * N, 40 + uint32_t(i)), DType::f16);
    auto w0 = test::rounded(test::random_values(size_t(N) * K, 50 + uint32_t(i)), DType::f16);
    auto dx0 = test::rounded(test::random_values(size_t(M) * K, 60 + uint32_t(i)), out);
    dys.push_back(test::tensor_from(dev(), {M, N}, DType::f16, dy0));
    ws.push_back(test::tensor_from(dev(), {N, K}, DType::f16, w0));
    dxs.push_back(test::tensor_from(dev(), {M, K}, out, dx0));
    want[i].resize(size_t(M) * K);
    ops::ref::matmul_backward_x(want[i], dy0, w0, M, N, K);
    for (size_t j = 0; j < want[i].size(); ++j) want[i][j] += dx0[j];
  }
  vk::Recorder rec(dev());
  for (size_t i = 0; i < Ns.size(); ++i) ops::matmul_backward_x(rec, dxs[i], dys[i], ws[i], true);
  vk::Program program = rec.finish();
  program.run();  // dx += dy·W once
  std::vector<std::vector<float>> first;
  for (size_t i = 0; i < Ns.size(); ++i) {
    first.push_back(download(dxs[i]));
    test::expect_close(first[i], test::rounded(want[i], dxs[i].dtype()), tol(dev(), M, DType::f16, dxs[i].dtype()),
                       "matmul_backward_x #" + std::to_string(i), dxs[i].shape());
  }
  // Runs 2-5 on run 1's inputs, dx set back to its first values before each: every run writes the same bits.
  for (int run = 2; run <= 5; ++run) {
    for (size_t i = 0; i < Ns.size(); ++i) {
      auto dx0 = test::rounded(test::random_values(size_t(M) * K, 60 + uint32_t(i)), dxs[i].dtype());
      upload(dxs[i], dx0);
    }
    program.run();
    for (size_t i = 0; i < Ns.size(); ++i)
      EXPECT_EQ(download(dxs[i]), first[i]) << "product " << i << " differs in run " << run;
  }
}

// dx (+)= dy·W + dt·A in one product (the adapter's term in the epilogue on the shader cores and coopmat2), at a
// small shape and at the 0.5B shape's fused q, k, v dx (a split reduction of 1152 on coopmat2), into f32 and f16.
class MatmulBackwardXLoraTest : public test::GpuTest {};

TEST_F(MatmulBackwardXLoraTest, AdapterTermMatchesReference) {
  struct Shape3 {
    uint32_t M, N, K, r;
    DType dy, w, dx;
  };
  for (const Shape3& c : {Shape3{33, 40, 72, 8, DType::f32, DType::f32, DType::f32},
                          Shape3{512, 1152, 896, 8, DType::f16, DType::f16, DType::f32},
                          Shape3{96, 136, 64, 16, DType::f16, DType::f16, DType::f16}}) {
    for (bool accumulate : {false, true}) {
      auto dy0 = test::rounded(test::random_values(size_t(c.M) * c.N, 70), c.dy);
      auto w0 = test::rounded(test::random_values(size_t(c.N) * c.K, 71), c.w);
      auto dt0 = test::random_values(size_t(c.M) * c.r, 72);
      auto a0 = test::random_values(size_t(c.r) * c.K, 73);
      auto dx0 = test::rounded(test::random_values(size_t(c.M) * c.K, 74), c.dx);
      auto dy = test::tensor_from(dev(), {c.M, c.N}, c.dy, dy0);
      auto w = test::tensor_from(dev(), {c.N, c.K}, c.w, w0);
      auto dt = test::tensor_from(dev(), {c.M, c.r}, DType::f32, dt0);
      auto a = test::tensor_from(dev(), {c.r, c.K}, DType::f32, a0);
      auto dx = test::tensor_from(dev(), {c.M, c.K}, c.dx, dx0);
      test::run(dev(), [&](vk::Recorder& rec) { ops::matmul_backward_x_lora(rec, dx, dy, w, dt, a, accumulate); });
      std::vector<float> want(size_t(c.M) * c.K), term(size_t(c.M) * c.K);
      ops::ref::matmul_backward_x(want, dy0, w0, c.M, c.N, c.K);
      ops::ref::matmul_backward_x(term, dt0, a0, c.M, c.r, c.K);
      for (size_t i = 0; i < want.size(); ++i) want[i] += term[i] + (accumulate ? dx0[i] : 0.0f);
      // (on tensor cores dt and A are rounded to f16 too: the products' tolerance)
      test::expect_close(download(dx), test::rounded(want, c.dx), tol(dev(), c.M, c.w, c.dx),
                         "matmul_backward_x_lora " + std::to_string(c.M) + "x" + std::to_string(c.K) +
                             (accumulate ? " accumulating" : ""),
                         dx.shape());
    }
  }
  auto f = Tensor::empty(dev(), {4, 8}, DType::f32), w = Tensor::empty(dev(), {8, 8}, DType::f32);
  auto bad_a = Tensor::empty(dev(), {2, 7}, DType::f32), dt = Tensor::empty(dev(), {4, 2}, DType::f32);
  vk::Recorder rec(dev());
  EXPECT_THROW(ops::matmul_backward_x_lora(rec, f, f, w, dt, bad_a), Error);
}

// [SECTION] LoRA

struct LoraCase {
  uint32_t M, N, K, r;
  DType w = DType::bf16;  // the frozen weight's dtype (f16: the tensor-core paths take it as it is)
  DType x = DType::f32;   // the input's (f16: training's f16 activations, read by the skinny kernels' f16 forms)
};

class LoraTest : public test::GpuTest, public ::testing::WithParamInterface<LoraCase> {};

TEST_P(LoraTest, ForwardAndBackwardMatchReference) {
  auto [M, N, K, r, wt, xt] = GetParam();
  const float scale = 16.0f / float(r);
  auto x0 = test::rounded(test::random_values(size_t(M) * K, 20), xt);
  auto w0 = test::rounded(test::random_values(size_t(N) * K, 21), wt);
  auto bias0 = test::rounded(test::random_values(N, 22), wt);
  auto a0 = test::random_values(size_t(r) * K, 23, 0.1f);
  auto b0 = test::random_values(size_t(N) * r, 24, 0.1f);
  auto dy0 = test::random_values(size_t(M) * N, 25);
  auto da0 = test::random_values(size_t(r) * K, 26, 0.01f);
  auto db0 = test::random_values(size_t(N) * r, 27, 0.01f);
  auto& d = dev();
  auto x = test::tensor_from(d, {M, K}, xt, x0);
  auto w = test::tensor_from(d, {N, K}, wt, w0);
  auto bias = test::tensor_from(d, {N}, wt, bias0);
  auto a = test::tensor_from(d, {r, K}, DType::f32, a0);
  auto b = test::tensor_from(d, {N, r}, DType::f32, b0);
  auto dy = test::tensor_from(d, {M, N}, DType::f32, dy0);
  auto da = test::tensor_from(d, {r, K}, DType::f32, da0);
  auto db = test::tensor_from(d, {N, r}, DType::f32, db0);
  auto y = test::poisoned(d, {M, N}, DType::f32);
  auto t = test::poisoned(d, {M, r}, DType::f32);
  auto dt = test::poisoned(d, {M, r}, DType::f32);
  auto dx = test::poisoned(d, {M, K}, DType::f32);
  // The same backward adding to an existing dx (the layer's second and third projections of one input).
  const auto dx_before = test::random_values(size_t(M) * K, 28);
  auto dx_acc = test::tensor_from(d, {M, K}, DType::f32, dx_before);
  auto da2 = test::tensor_from(d, {r, K}, DType::f32, da0), db2 = test::tensor_from(d, {N, r}, DType::f32, db0);
  auto dt2 = test::poisoned(d, {M, r}, DType::f32);
  // The forward adding to an existing y (inference's residual stream).
  const auto y_before = test::random_values(size_t(M) * N, 29);
  auto y_acc = test::tensor_from(d, {M, N}, DType::f32, y_before);
  auto t2 = test::poisoned(d, {M, r}, DType::f32);
  test::run(d, [&](vk::Recorder& rec) {
    ops::lora_forward(rec, y.t, t.t, x, w, bias, a, b, scale);
    ops::lora_forward(rec, y_acc, t2.t, x, w, bias, a, b, scale, {}, true);
    ops::lora_backward(rec, dx.t, da, db, dt.t, dy, x, t.t, w, a, b, scale);
    ops::lora_backward(rec, dx_acc, da2, db2, dt2.t, dy, x, t.t, w, a, b, scale, true);
  });

  std::vector<float> want_y(size_t(M) * N), want_t(size_t(M) * r);
  ops::ref::lora_forward(want_y, want_t, x0, w0, bias0, a0, b0, M, N, K, r, scale);
  test::expect_close(download(t.t), want_t, 1e-5, "lora t", t.t.shape());
  const double base_tol = tol(d, M, wt, DType::f32);  // the frozen product may be on tensor cores
  test::expect_close(download(y.t), want_y, base_tol, "lora y", y.t.shape());
  std::vector<float> want_y_acc = want_y;
  for (size_t i = 0; i < want_y_acc.size(); ++i) want_y_acc[i] += y_before[i];
  test::expect_close(download(y_acc), want_y_acc, base_tol, "lora y accumulating", y_acc.shape());

  // Backward reference written out from the same formulas the op documents.
  std::vector<float> want_db = db0, want_dt(size_t(M) * r), want_da = da0, want_dx(size_t(M) * K), tmp(size_t(M) * K);
  ops::ref::matmul_backward_w(want_db, dy0, want_t, M, N, r, scale);
  ops::ref::matmul_backward_x(want_dt, dy0, b0, M, N, r);
  for (auto& v : want_dt) v *= scale;
  ops::ref::matmul_backward_w(want_da, want_dt, x0, M, r, K, 1.0f);
  ops::ref::matmul_backward_x(want_dx, dy0, w0, M, N, K);
  ops::ref::matmul_backward_x(tmp, want_dt, a0, M, r, K);
  for (size_t i = 0; i < tmp.size(); ++i) want_dx[i] += tmp[i];
  test::expect_close(download(db), want_db, 1e-5, "lora dB", db.shape());
  test::expect_close(download(dt.t), want_dt, 1e-5, "lora dt", dt.t.shape());
  test::expect_close(download(da), want_da, 1e-5, "lora dA", da.shape());
  test::expect_close(download(dx.t), want_dx, base_tol, "lora dx", dx.t.shape());
  for (size_t i = 0; i < want_dx.size(); ++i) want_dx[i] += dx_before[i];
  test::expect_close(download(dx_acc), want_dx, base_tol, "lora dx accumulating", dx_acc.shape());
  test::expect_close(download(da2), want_da, 1e-5, "lora dA (second run)", da2.shape());
  for (auto* p : {&y, &t, &dt, &dx, &dt2}) p->expect_guards_intact("lora");
}

INSTANTIATE_TEST_SUITE_P(Shapes, LoraTest,
                         ::testing::Values(LoraCase{1, 1, 1, 1}, LoraCase{7, 33, 129, 8}, LoraCase{33, 65, 17, 4},
                                           LoraCase{130, 96, 64, 16},
                                           // training's shapes, smaller: rank-r products on the skinny kernel
                                           LoraCase{256, 128, 448, 8}, LoraCase{160, 448, 96, 8},
                                           // f16 weights with 8-aligned rows: on a device with
                                           // VK_NV_cooperative_matrix2, the workgroup-scope kernel's epilogue
                                           // products (bias, LoRA) and edge tiles; elsewhere the other paths
                                           LoraCase{200, 264, 136, 8, DType::f16}, LoraCase{136, 72, 520, 16, DType::f16},
                                           // the 128×128 tile (over 512 rows, 81 tiles: no split-K), rank 20
                                           LoraCase{1030, 1048, 200, 20, DType::f16},
                                           // a few rows with a bias and the adapter's term (the 16-row tile, split)
                                           LoraCase{16, 136, 1024, 8, DType::f16},
                                           // f16 inputs: t = x·Aᵀ and dA = dtᵀ·x on the skinny kernels' f16 forms
                                           LoraCase{256, 128, 448, 8, DType::bf16, DType::f16},
                                           LoraCase{160, 448, 96, 8, DType::f16, DType::f16}));

class LoraDropoutTest : public test::GpuTest {};

// With LoRA dropout (p = 0.25, stream 5): the adapter sees x̃ = dropout(x) and the activation gradient
// goes back through the same mask; written out from ops/dropout's reference. Same tolerances as above.
TEST_F(LoraDropoutTest, ForwardAndBackwardMatchReference) {
  const uint32_t M = 37, N = 48, K = 72, r = 4;
  const float scale = 2.0f, p = 0.25f;
  const std::array<uint32_t, 2> seed_words = {11, 3};
  const uint32_t stream = 5;
  auto x0 = test::random_values(size_t(M) * K, 40);
  auto w0 = test::rounded(test::random_values(size_t(N) * K, 41), DType::bf16);
  auto a0 = test::random_values(size_t(r) * K, 43, 0.1f);
  auto b0 = test::random_values(size_t(N) * r, 44, 0.1f);
  auto dy0 = test::random_values(size_t(M) * N, 45);
  auto da0 = test::random_values(size_t(r) * K, 46, 0.01f);
  auto db0 = test::random_values(size_t(N) * r, 47, 0.01f);
  auto& d = dev();
  auto x = test::tensor_from(d, {M, K}, DType::f32, x0);
  auto w = test::tensor_from(d, {N, K}, DType::bf16, w0);
  auto a = test::tensor_from(d, {r, K}, DType::f32, a0);
  auto b = test::tensor_from(d, {N, r}, DType::f32, b0);
  auto dy = test::tensor_from(d, {M, N}, DType::f32, dy0);
  auto da = test::tensor_from(d, {r, K}, DType::f32, da0);
  auto db = test::tensor_from(d, {N, r}, DType::f32, db0);
  auto y = test::poisoned(d, {M, N}, DType::f32);
  auto t = test::poisoned(d, {M, r}, DType::f32);
  auto dt = test::poisoned(d, {M, r}, DType::f32);
  auto dx = test::poisoned(d, {M, K}, DType::f32);
  const ops::LoraDropout dropout{.p = p,
                                 .seed = test::tensor_from_ints(d, {2}, std::vector<int32_t>{int32_t(seed_words[0]), int32_t(seed_words[1])}),
                                 .stream = stream};
  test::run(d, [&](vk::Recorder& rec) {
    ops::lora_forward(rec, y.t, t.t, x, w, Tensor(), a, b, scale, dropout);
    ops::lora_backward(rec, dx.t, da, db, dt.t, dy, x, t.t, w, a, b, scale, false, 1.0f, dropout);
  });

  std::vector<float> xd(x0.size()), want_t(size_t(M) * r), want_y(size_t(M) * N), low(size_t(M) * N);
  ops::ref::dropout_forward(xd, x0, p, seed_words, stream);
  size_t dropped = 0;
  for (size_t i = 0; i < xd.size(); ++i) dropped += xd[i] == 0.0f;
  EXPECT_GT(dropped, xd.size() / 8) << "the mask drops about a quarter";
  ops::ref::matmul_forward(want_t, xd, a0, {}, M, r, K);
  ops::ref::matmul_forward(want_y, x0, w0, {}, M, N, K);
  ops::ref::matmul_forward(low, want_t, b0, {}, M, N, r);
  for (size_t i = 0; i < want_y.size(); ++i) want_y[i] += scale * low[i];
  test::expect_close(download(t.t), want_t, 1e-5, "lora t", t.t.shape());
  const double base_tol = tol(d, M, DType::bf16, DType::f32);
  test::expect_close(download(y.t), want_y, base_tol, "lora y", y.t.shape());

  std::vector<float> want_db = db0, want_dt(size_t(M) * r), want_da = da0, want_dx(size_t(M) * K), through(size_t(M) * K);
  ops::ref::matmul_backward_w(want_db, dy0, want_t, M, N, r, scale);
  ops::ref::matmul_backward_x(want_dt, dy0, b0, M, N, r);
  for (auto& v : want_dt) v *= scale;
  ops::ref::matmul_backward_w(want_da, want_dt, xd, M, r, K, 1.0f);
  ops::ref::matmul_backward_x(want_dx, dy0, w0, M, N, K);
  ops::ref::matmul_backward_x(through, want_dt, a0, M, r, K);
  ops::ref::dropout_backward(want_dx, through, p, seed_words, stream, true);
  test::expect_close(download(db), want_db, 1e-5, "lora dB", db.shape());
  test::expect_close(download(dt.t), want_dt, 1e-5, "lora dt", dt.t.shape());
  test::expect_close(download(da), want_da, 1e-5, "lora dA", da.shape());
  test::expect_close(download(dx.t), want_dx, base_tol, "lora dx", dx.t.shape());
  for (auto* q : {&y, &t, &dt, &dx}) q->expect_guards_intact("lora dropout");
}

// The reference LoRA gradients against central differences of a double-precision forward of
// L = Σ dy ⊙ y(x, A, B).
TEST(LoraReference, BackwardIsTheGradientOfTheForward) {
  const size_t M = 3, N = 4, K = 5, r = 2;
  const double s = 1.5;
  auto x = test::random_values(M * K, 30);
  auto w = test::random_values(N * K, 31);
  auto a = test::random_values(r * K, 32);
  auto b = test::random_values(N * r, 33);
  auto dy = test::random_values(M * N, 34);
  auto loss = [&](const std::vector<double>& xd, const std::vector<double>& ad, const std::vector<double>& bd) {
    double L = 0;
    for (size_t m = 0; m < M; ++m)
      for (size_t n = 0; n < N; ++n) {
        double y = 0;
        for (size_t k = 0; k < K; ++k) y += xd[m * K + k] * w[n * K + k];
        for (size_t j = 0; j < r; ++j) {
          double t = 0;
          for (size_t k = 0; k < K; ++k) t += xd[m * K + k] * ad[j * K + k];
          y += s * t * bd[n * r + j];
        }
        L += dy[m * N + n] * y;
      }
    return L;
  };
  std::vector<double> xd(x.begin(), x.end()), ad(a.begin(), a.end()), bd(b.begin(), b.end());
  auto fd = [&](std::vector<double>& v, size_t i) {
    const double h = 1e-6, keep = v[i];
    v[i] = keep + h;
    double up = loss(xd, ad, bd);
    v[i] = keep - h;
    double down = loss(xd, ad, bd);
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  // Reference gradients (the same composition lora_backward performs).
  std::vector<float> t(M * r), y(M * N), da(r * K, 0.f), db(N * r, 0.f), dt(M * r), dx(M * K), tmp(M * K);
  ops::ref::lora_forward(y, t, x, w, {}, a, b, M, N, K, r, float(s));
  ops::ref::matmul_backward_w(db, dy, t, M, N, r, float(s));
  ops::ref::matmul_backward_x(dt, dy, b, M, N, r);
  for (auto& v : dt) v *= float(s);
  ops::ref::matmul_backward_w(da, dt, x, M, r, K, 1.0f);
  ops::ref::matmul_backward_x(dx, dy, w, M, N, K);
  ops::ref::matmul_backward_x(tmp, dt, a, M, r, K);
  for (size_t i = 0; i < M * K; ++i) EXPECT_NEAR(dx[i] + tmp[i], fd(xd, i), 1e-4) << "dx " << i;
  for (size_t i = 0; i < r * K; ++i) EXPECT_NEAR(da[i], fd(ad, i), 1e-4) << "dA " << i;
  for (size_t i = 0; i < N * r; ++i) EXPECT_NEAR(db[i], fd(bd, i), 1e-4) << "dB " << i;
}

// [SECTION] Operands past the binding limit are split

TEST(MatmulSplit, OperandsLargerThanOneBindingAreSplit) {
  std::vector<std::string> messages;
  vk::DeviceOptions opts;
  opts.validation = test::validation_wanted();
  opts.on_validation_message = [&](const std::string& m) { messages.push_back(m); };
  opts.storage_range_limit = 64 * 1024;  // 64 KiB: every operand below is split
  vk::Device d(opts);
  const uint32_t M = 300, N = 1000, K = 40;
  auto x0 = test::random_values(size_t(M) * K, 40);
  auto w0 = test::rounded(test::random_values(size_t(N) * K, 41), DType::bf16);
  auto b0 = test::rounded(test::random_values(N, 42), DType::bf16);
  auto dy0 = test::random_values(size_t(M) * N, 43);
  auto x = test::tensor_from(d, {M, K}, DType::f32, x0);
  auto w = test::tensor_from(d, {N, K}, DType::bf16, w0);
  auto b = test::tensor_from(d, {N}, DType::bf16, b0);
  auto dy = test::tensor_from(d, {M, N}, DType::f32, dy0);
  const uint32_t r = 8;
  auto a0 = test::random_values(size_t(r) * K, 44, 0.1f);
  auto lb0 = test::random_values(size_t(N) * r, 45, 0.1f);
  auto la = test::tensor_from(d, {r, K}, DType::f32, a0);
  auto lb = test::tensor_from(d, {N, r}, DType::f32, lb0);
  auto y = Tensor::empty(d, {M, N}, DType::f32);
  auto yl = Tensor::empty(d, {M, N}, DType::f32);
  auto t = Tensor::empty(d, {M, r}, DType::f32);
  auto dx = Tensor::empty(d, {M, K}, DType::f32);
  vk::Recorder rec(d);
  ops::matmul_forward(rec, y, x, w, b);
  ops::matmul_backward_x(rec, dx, dy, w);  // K = N = 1000 rows of dy per row: split along the reduction
  ops::lora_forward(rec, yl, t, x, w, b, la, lb, 2.0f);
  auto program = rec.finish();
  EXPECT_GT(program.dispatch_count(), 2u);
  program.run();
  std::vector<float> want_y(size_t(M) * N), want_dx(size_t(M) * K);
  ops::ref::matmul_forward(want_y, x0, w0, b0, M, N, K);
  ops::ref::matmul_backward_x(want_dx, dy0, w0, M, N, K);
  const double split_tol = tol(d, M, DType::bf16, DType::f32);
  test::expect_close(download(y), want_y, split_tol, "split matmul_forward", y.shape());
  test::expect_close(download(dx), want_dx, split_tol, "split matmul_backward_x", dx.shape());
  std::vector<float> want_yl(size_t(M) * N), want_t(size_t(M) * r);
  ops::ref::lora_forward(want_yl, want_t, x0, w0, b0, a0, lb0, M, N, K, r, 2.0f);
  test::expect_close(download(yl), want_yl, split_tol, "split lora_forward", yl.shape());
  for (const auto& m : messages) ADD_FAILURE() << "Vulkan validation message: " << m;
}

// [SECTION] Split-K of long reductions by waves (the coopmat2 path's rule; no device needed)

// The rule picks the slices that fill the last wave of workgroups best, the fewest among equals: on 132 SMs the
// lm_head's dx at 2,048 rows (56 tiles of 256×128, one workgroup an SM) takes 7 slices, 392 workgroups in 396 slots
// (session 29 measured 7 fastest of 2-12); the 128×128 tile runs two workgroups an SM once they reach the SMs.
TEST(MatmulCm2Rules, SplitsFillTheLastWaveTilesFollowTheShape) {
  using ops::detail::Cm2Tile;
  using ops::detail::split_by_waves;
  EXPECT_EQ(split_by_waves(Cm2Tile::t, 56, 151936, 132), 7u);   // 392 of 396 (14 fills as well: the fewer wins)
  EXPECT_EQ(split_by_waves(Cm2Tile::m, 14, 151936, 132), 9u);   // 126 of 132, one an SM below 132 workgroups
  EXPECT_EQ(split_by_waves(Cm2Tile::m, 56, 152064, 132), 14u);  // 784 of 792 at two an SM
  EXPECT_EQ(split_by_waves(Cm2Tile::t, 10, 151936, 28), 14u);   // a 28-SM GPU: 140 workgroups in exactly 5 waves
  EXPECT_EQ(split_by_waves(Cm2Tile::t, 4, 5000, 28), 4u);       // slices at least 1024 long: at most 4
  EXPECT_EQ(split_by_waves(Cm2Tile::t, 4, 1500, 132), 1u);      // too short for two such slices
  EXPECT_EQ(split_by_waves(Cm2Tile::t, 132, 151936, 132), 1u);  // one full wave already
  EXPECT_EQ(ops::detail::cm2_rule_threads(Cm2Tile::m, 131, 132), 256u);
  // Tiles: 128×64 for short reductions at up to 512 rows (the MLP's products, the lm_head's logits), 128×128 above
  // 512 rows and for long reductions; the 16-row tile for a few rows.
  using ops::detail::cm2_tile;
  if (!std::getenv("LORASTUDIO_CM2_TILE") && !std::getenv("LORASTUDIO_CM2_SHORT_K") && !std::getenv("LORASTUDIO_CM2_FEW_ROWS")) {
    EXPECT_EQ(cm2_tile(512, 4864, 896, 132), Cm2Tile::h);
    EXPECT_EQ(cm2_tile(4096, 4864, 896, 132), Cm2Tile::m);
    EXPECT_EQ(cm2_tile(256, 151936, 896, 132), Cm2Tile::h);
    EXPECT_EQ(cm2_tile(2048, 151936, 896, 132), Cm2Tile::m);
    EXPECT_EQ(cm2_tile(2048, 896, 151936, 132), Cm2Tile::t);
    EXPECT_EQ(cm2_tile(512, 3584, 18944, 132), Cm2Tile::m);
    EXPECT_EQ(cm2_tile(8, 896, 4864, 132), Cm2Tile::d);
  }
  EXPECT_EQ(ops::detail::cm2_rule_threads(Cm2Tile::m, 132, 132), 128u);
  EXPECT_EQ(ops::detail::cm2_rule_threads(Cm2Tile::t, 1000, 132), 256u);
}

// The unrolled K loop's trip: no steps left to the loop's tail where a trip of 5-8 steps divides the slice, else the
// whole slice up to 16 steps, else 8 (the shader's own).
TEST(MatmulCm2Rules, UnrollLeavesNoTailWhereItCan) {
  using ops::detail::cm2_rule_unroll;
  EXPECT_EQ(cm2_rule_unroll(14), 7u);    // K = 896: two trips of 7 (8 left 6 steps to the tail)
  EXPECT_EQ(cm2_rule_unroll(56), 8u);    // K = 3584
  EXPECT_EQ(cm2_rule_unroll(296), 8u);   // K = 18944
  EXPECT_EQ(cm2_rule_unroll(76), 8u);    // K = 4864: 76 = 4·19, no trip of 5-8 divides it
  EXPECT_EQ(cm2_rule_unroll(2374), 8u);  // K = 151936 = 2·1187 steps
  EXPECT_EQ(cm2_rule_unroll(1187), 8u);  // a split slice of the lm head's dx: long slices keep 8, tail and all
  EXPECT_EQ(cm2_rule_unroll(21), 8u);    // 7 divides it, but past 16 steps the tail costs less than shorter trips
  EXPECT_EQ(cm2_rule_unroll(15), 5u);
  EXPECT_EQ(cm2_rule_unroll(13), 13u);   // prime, one trip
  EXPECT_EQ(cm2_rule_unroll(2), 2u);
  EXPECT_EQ(cm2_rule_unroll(17), 8u);
  for (uint32_t s = 1; s <= 400; ++s) {
    const uint32_t u = cm2_rule_unroll(s);
    EXPECT_TRUE(u >= 1 && u <= 16) << s;
    EXPECT_TRUE(s <= 16 ? s % u == 0 : u == 8) << s;
  }
}

// [SECTION] The gated activation's backward in down's dx product

// ops::matmul_backward_x_glu: d gate and d up from dy·w with SiLU's or GELU-tanh's backward in the product's epilogue
// are the bits of the product written out (in gate's dtype) and then silu_mul_backward / gelu_tanh_mul_backward, and
// match the double-accumulating reference (tolerance: f32 1e-5; f16 5e-3: d gated and the outputs rounded to f16, on
// tensor cores dy too). Where the device's kernel for the product is the shader cores' one, or the
// cooperative-matrix-2 one with f16 operands, the epilogue takes it; elsewhere the op returns false. A reduction of
// 1024 over 24 rows splits K on lavapipe (the reduce applies the epilogue).
struct GluCase {
  uint32_t M, N, K;  // dy [M, N], w [N, K], gate and up [M, K]
  DType act, w;
  ops::GluActivation f;
};

class MatmulGluTest : public test::GpuTest {};

TEST_F(MatmulGluTest, EpilogueGivesTheBitsOfTheProductThenTheActivationsBackward) {
  using G = ops::GluActivation;
  setenv("LORASTUDIO_GLU_EPILOGUE", "1", 1);  // the cooperative-matrix-2 kernel's too (off there by default)
  for (const GluCase& c : {GluCase{40, 96, 136, DType::f32, DType::f32, G::silu},
                           GluCase{40, 96, 136, DType::f16, DType::f16, G::silu},
                           GluCase{40, 96, 136, DType::f16, DType::bf16, G::gelu_tanh},
                           GluCase{24, 1024, 40, DType::f16, DType::f32, G::silu},
                           GluCase{24, 1024, 40, DType::f16, DType::f16, G::gelu_tanh},
                           GluCase{136, 80, 200, DType::f32, DType::f16, G::gelu_tanh}}) {
    const std::string what = std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) + " " +
                             dtype_name(c.act) + " w " + dtype_name(c.w) + (c.f == G::silu ? " silu" : " gelu_tanh");
    const size_t n = size_t(c.M) * c.K;
    const auto dy0 = test::random_values(size_t(c.M) * c.N, 80, 0.5f);
    const auto w0 = test::rounded(test::random_values(size_t(c.N) * c.K, 81, 0.2f), c.w);
    const auto gate0 = test::rounded(test::random_values(n, 82, 2.0f), c.act);
    const auto up0 = test::rounded(test::random_values(n, 83), c.act);
    auto dy = test::tensor_from(dev(), {c.M, c.N}, DType::f32, dy0);
    auto w = test::tensor_from(dev(), {c.N, c.K}, c.w, w0);
    auto gate = test::tensor_from(dev(), {c.M, c.K}, c.act, gate0);
    auto up = test::tensor_from(dev(), {c.M, c.K}, c.act, up0);
    auto dgate = test::poisoned(dev(), {c.M, c.K}, c.act), dup = test::poisoned(dev(), {c.M, c.K}, c.act);
    auto dgate_apart = test::poisoned(dev(), {c.M, c.K}, c.act), dup_apart = test::poisoned(dev(), {c.M, c.K}, c.act);
    auto dgated = Tensor::empty(dev(), {c.M, c.K}, c.act, "d gated");
    bool fused = false;
    auto backward = [&](vk::Recorder& rec, const Tensor& dg, const Tensor& du) {
      if (c.f == G::silu) ops::silu_mul_backward(rec, dg, du, dgated, gate, up);
      else ops::gelu_tanh_mul_backward(rec, dg, du, dgated, gate, up);
    };
    test::run(dev(), [&](vk::Recorder& rec) {
      fused = ops::matmul_backward_x_glu(rec, dgate.t, dup.t, dy, w, gate, up, c.f);
      if (!fused) {
        ops::matmul_backward_x(rec, dgated, dy, w);
        backward(rec, dgate.t, dup.t);
      }
      ops::matmul_backward_x(rec, dgated, dy, w);
      backward(rec, dgate_apart.t, dup_apart.t);
    });
    const bool takes = !dev().coopmat() || (dev().coopmat2() && c.act == DType::f16 && c.w == DType::f16);
    EXPECT_EQ(fused, takes) << what;
    EXPECT_EQ(download(dgate.t), download(dgate_apart.t)) << what << ": d gate";
    EXPECT_EQ(download(dup.t), download(dup_apart.t)) << what << ": d up";
    dgate.expect_guards_intact(what.c_str());
    dup.expect_guards_intact(what.c_str());

    std::vector<float> dgated_ref(n), dgate_ref(n), dup_ref(n);
    ops::ref::matmul_backward_x(dgated_ref, dy0, w0, c.M, c.N, c.K);
    dgated_ref = test::rounded(dgated_ref, c.act);
    if (c.f == G::silu) ops::ref::silu_mul_backward(dgate_ref, dup_ref, dgated_ref, gate0, up0);
    else ops::ref::gelu_tanh_mul_backward(dgate_ref, dup_ref, dgated_ref, gate0, up0);
    const double rtol = c.act == DType::f32 && !(dev().coopmat() && c.w != DType::f32) ? 1e-5 : 5e-3;
    test::expect_close(download(dgate.t), test::rounded(dgate_ref, c.act), rtol, what + ": d gate", dgate.t.shape());
    test::expect_close(download(dup.t), test::rounded(dup_ref, c.act), rtol, what + ": d up", dup.t.shape());
  }
  unsetenv("LORASTUDIO_GLU_EPILOGUE");
}

// A few rows (the matrix-vector kernels), LORASTUDIO_GLU_EPILOGUE=0 or mixed dtypes: nothing recorded, false returned;
// an output sharing an input's memory is an error naming the op.
TEST_F(MatmulGluTest, NotTakenWhereNoKernelAppliesIt) {
  auto dy = test::tensor_from(dev(), {4, 96}, DType::f32, test::random_values(4 * 96, 84));
  auto w = test::tensor_from(dev(), {96, 64}, DType::f32, test::random_values(96 * 64, 85));
  auto act = [&](uint32_t M, DType t) { return Tensor::empty(dev(), {M, 64}, t, "glu operand"); };
  auto dy40 = test::tensor_from(dev(), {40, 96}, DType::f32, test::random_values(40 * 96, 86));
  vk::Recorder rec(dev());
  const auto silu = ops::GluActivation::silu;
  EXPECT_FALSE(ops::matmul_backward_x_glu(rec, act(4, DType::f32), act(4, DType::f32), dy, w, act(4, DType::f32),
                                          act(4, DType::f32), silu));
  EXPECT_FALSE(ops::matmul_backward_x_glu(rec, act(40, DType::f16), act(40, DType::f16), dy40, w, act(40, DType::f32),
                                          act(40, DType::f32), silu));
  setenv("LORASTUDIO_GLU_EPILOGUE", "0", 1);
  EXPECT_FALSE(ops::matmul_backward_x_glu(rec, act(40, DType::f32), act(40, DType::f32), dy40, w, act(40, DType::f32),
                                          act(40, DType::f32), silu));
  unsetenv("LORASTUDIO_GLU_EPILOGUE");
  EXPECT_EQ(rec.finish().dispatch_count(), 0u);
  vk::Recorder errors(dev());
  const Tensor gate = act(40, DType::f32);
  test::expect_error_naming(
      [&] { ops::matmul_backward_x_glu(errors, gate, act(40, DType::f32), dy40, w, gate, act(40, DType::f32), silu); },
      "matmul_backward_x_glu");
  test::expect_error_naming(
      [&] { ops::matmul_backward_x_glu(errors, act(40, DType::f32), act(40, DType::f32), dy40, w, act(41, DType::f32),
                                       act(41, DType::f32), silu); },
      "matmul_backward_x_glu");
}

// [SECTION] RoPE in the split reduce

// ops::RopeInReduce: a split product's reduce rotates its output (heads of 10 values here) as rope_forward would after
// it: the same bits, with a bias and with a LoRA term, f32 and f16 out; `applied` where the product splits (on
// lavapipe's shader cores a reduction of 512 over 24 rows does), and not where LORASTUDIO_ROPE_IN_REDUCE=0.
TEST(MatmulRope, RotatedByTheReduceAsByRopeAfterIt) {
  vk::Device& dev = test::device();
  const uint32_t M = 24, K = 512, N = 40, D = 10;
  auto x = test::tensor_from(dev, {M, K}, DType::f32, test::random_values(size_t(M) * K, 95));
  auto w = test::tensor_from(dev, {N, K}, DType::f32, test::random_values(size_t(N) * K, 96, 0.2f));
  auto bias = test::tensor_from(dev, {N}, DType::f32, test::random_values(N, 97));
  auto a = test::tensor_from(dev, {4, K}, DType::f32, test::random_values(4 * K, 98, 0.2f));
  auto b = test::tensor_from(dev, {N, 4}, DType::f32, test::random_values(N * 4, 99, 0.2f));
  std::vector<int32_t> pos(M);
  for (uint32_t i = 0; i < M; ++i) pos[i] = int32_t(3 * i + 1);
  auto positions = test::tensor_from_ints(dev, {M}, pos);
  std::vector<float> freq(D / 2);
  for (uint32_t i = 0; i < D / 2; ++i) freq[i] = std::pow(10000.0f, -2.0f * float(i) / float(D));
  auto inv_freq = test::tensor_from(dev, {D / 2}, DType::f32, freq);
  for (bool off : {false, true})
    for (DType out : {DType::f32, DType::f16})
      for (bool lora : {false, true}) {
        const std::string what = std::string(dtype_name(out)) + (lora ? " with a LoRA term" : "") + (off ? " (off)" : "");
        auto want = Tensor::empty(dev, {M, N / D, D}, out, "want"), got = Tensor::empty(dev, {M, N / D, D}, out, "got");
        auto t = Tensor::empty(dev, {M, 4}, DType::f32, "t");
        ops::RopeInReduce rope{.positions = positions, .inv_freq = inv_freq, .head_dim = D};
        if (off) setenv("LORASTUDIO_ROPE_IN_REDUCE", "0", 1);
        test::run(dev, [&](vk::Recorder& rec) {
          auto product = [&](const Tensor& y, ops::RopeInReduce* r) {
            if (lora) ops::lora_forward(rec, y.reshape({M, N}), t, x, w, bias, a, b, 2.0f, {}, false, r);
            else ops::matmul_forward(rec, y.reshape({M, N}), x, w, bias, false, r);
          };
          product(want, nullptr);
          ops::rope_forward(rec, want, want, positions, inv_freq);
          product(got, &rope);
          if (!rope.applied) ops::rope_forward(rec, got, got, positions, inv_freq);
        });
        unsetenv("LORASTUDIO_ROPE_IN_REDUCE");
        if (off || !dev.coopmat()) {
          EXPECT_EQ(rope.applied, !off) << what;
        }
        EXPECT_EQ(download(got), download(want)) << what;
      }
}

// [SECTION] Bad input

class MatmulErrors : public test::GpuTest {};

TEST_F(MatmulErrors, ShapeAndDtypeMistakesNameTheOp) {
  auto& d = dev();
  auto x = Tensor::empty(d, {4, 8}, DType::f32);
  auto w = Tensor::empty(d, {6, 9}, DType::bf16);
  auto y = Tensor::empty(d, {4, 6}, DType::f32);
  auto wi = Tensor::empty(d, {6, 8}, DType::i32);
  vk::Recorder rec(d);
  try {
    ops::matmul_forward(rec, y, x, w, Tensor());
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmul_forward"), std::string::npos) << m;
    EXPECT_NE(m.find("[4, 8]"), std::string::npos) << m;
  }
  EXPECT_THROW(ops::matmul_forward(rec, y, x, wi, Tensor()), Error);
  auto w_ok = Tensor::empty(d, {6, 8}, DType::bf16);
  auto bias_f32 = Tensor::empty(d, {6}, DType::f32);
  EXPECT_THROW(ops::matmul_forward(rec, y, x, w_ok, bias_f32), Error);
  auto dw16 = Tensor::empty(d, {6, 8}, DType::f16);
  EXPECT_THROW(ops::matmul_backward_w(rec, dw16, y, x), Error);
}

}  // namespace
}  // namespace ls
