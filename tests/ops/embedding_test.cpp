// Embedding forward/backward against the CPU reference, the chunking of tables past one storage-buffer
// binding, and the reference backward against central finite differences in double.
// Tolerances: the forward copies rows, so f32 outputs are compared exactly (f16/bf16 tables convert to
// f32 exactly); converting into f16/bf16 outputs allows one rounding (2e-3 / 1e-2 rel). The backward
// sums in the reference's order; f32 1e-5 rel.
#include "ops/embedding.h"

#include <cstdio>
#include <cstring>
#include <numeric>

#include "support/testing.h"

namespace ls {
namespace {

double tol(DType t) { return t == DType::f32 ? 1e-5 : t == DType::f16 ? 2e-3 : 1e-2; }

void record_max_rel(const char* key, std::span<const float> actual, std::span<const float> expected) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", test::compare(actual, expected).max_rel);
  ::testing::Test::RecordProperty(key, text);
}

// Random ids in [0, V) where every third token repeats an earlier one; from 17 tokens on, two tokens
// carry ids outside [0, V) (zero rows forward, ignored backward).
std::vector<int32_t> ids_for(uint32_t n, uint32_t vocab, uint32_t seed) {
  auto ids = test::random_ints(n, seed, 0, int32_t(vocab) - 1);
  for (uint32_t t = 3; t < n; ++t)
    if (t % 3 == 2) ids[t] = ids[t / 3];
  if (n >= 17) ids[5] = -3, ids[n - 1] = int32_t(vocab);
  return ids;
}

void expect_error(vk::Device& dev, const std::function<void(vk::Recorder&)>& body, const char* op) {
  vk::Recorder rec(dev);
  try {
    body(rec);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
  }
}

using Case = std::tuple<uint32_t, uint32_t, uint32_t, DType>;  // V, C, N, dtype of table (forward) or dy
std::string case_name(const ::testing::TestParamInfo<Case>& c) {
  return "v" + std::to_string(std::get<0>(c.param)) + "_c" + std::to_string(std::get<1>(c.param)) + "_n" +
         std::to_string(std::get<2>(c.param)) + "_" + dtype_name(std::get<3>(c.param));
}
class EmbeddingTest : public test::GpuTest, public ::testing::WithParamInterface<Case> {};

TEST_P(EmbeddingTest, ForwardMatchesReference) {
  auto [vocab, cols, n, dtype] = GetParam();
  auto table0 = test::rounded(test::random_values(size_t(vocab) * cols, 1 + vocab + cols), dtype);
  auto ids0 = ids_for(n, vocab, 2 + n);
  auto table = test::tensor_from(dev(), {vocab, cols}, dtype, table0);
  auto ids = test::tensor_from_ints(dev(), {n}, ids0);
  auto y = test::poisoned(dev(), {n, cols}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::embedding_forward(rec, y.t, table, ids); });
  std::vector<float> want(size_t(n) * cols);
  ops::ref::embedding_forward(want, table0, ids0, cols);
  test::expect_close(download(y.t), want, 0.0, "embedding_forward", {n, cols});
  y.expect_guards_intact("embedding_forward");
}

TEST_P(EmbeddingTest, BackwardMatchesReference) {
  auto [vocab, cols, n, dtype] = GetParam();
  auto dtable0 = test::random_values(size_t(vocab) * cols, 3 + vocab + cols);  // accumulated into
  auto dy0 = test::rounded(test::random_values(size_t(n) * cols, 4 + n + cols), dtype);
  auto ids0 = ids_for(n, vocab, 5 + n);
  auto dtable = test::tensor_from(dev(), {vocab, cols}, DType::f32, dtable0);
  auto dy = test::tensor_from(dev(), {n, cols}, dtype, dy0);
  auto ids = test::tensor_from_ints(dev(), {n}, ids0);
  test::run(dev(), [&](vk::Recorder& rec) { ops::embedding_backward(rec, dtable, dy, ids); });
  auto want = dtable0;
  ops::ref::embedding_backward(want, dy0, ids0, cols);
  auto got = download(dtable);
  test::expect_close(got, want, 1e-5, "embedding_backward", {vocab, cols});
  record_max_rel("max_rel_err", got, want);
}

INSTANTIATE_TEST_SUITE_P(Shapes, EmbeddingTest,
                         ::testing::Combine(::testing::Values(1u, 7u, 1000u), ::testing::Values(1u, 33u, 896u, 4100u),
                                            ::testing::Values(1u, 17u, 64u),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         case_name);

// Every table type into every output type.
class EmbeddingOutputTest : public test::GpuTest, public ::testing::WithParamInterface<std::tuple<DType, DType>> {};

TEST_P(EmbeddingOutputTest, ConvertsRows) {
  auto [table_type, y_type] = GetParam();
  const uint32_t vocab = 1000, cols = 33, n = 17;
  auto table0 = test::rounded(test::random_values(size_t(vocab) * cols, 6), table_type);
  auto ids0 = ids_for(n, vocab, 7);
  auto table = test::tensor_from(dev(), {vocab, cols}, table_type, table0);
  auto ids = test::tensor_from_ints(dev(), {n}, ids0);
  auto y = test::poisoned(dev(), {n, cols}, y_type);
  test::run(dev(), [&](vk::Recorder& rec) { ops::embedding_forward(rec, y.t, table, ids); });
  std::vector<float> want(size_t(n) * cols);
  ops::ref::embedding_forward(want, table0, ids0, cols);
  want = test::rounded(want, y_type);
  auto got = download(y.t);
  test::expect_close(got, want, table_type == y_type ? 0.0 : tol(y_type), "embedding_forward", {n, cols});
  record_max_rel("max_rel_err", got, want);
  y.expect_guards_intact("embedding_forward");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EmbeddingOutputTest,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16, DType::bf16),
                                            ::testing::Values(DType::f32, DType::f16, DType::bf16)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, DType>>& c) {
                           return std::string(dtype_name(std::get<0>(c.param))) + "_to_" +
                                  dtype_name(std::get<1>(c.param));
                         });

class EmbeddingChunkTest : public test::GpuTest {};

// A small max_chunk_bytes splits the table on any device: ids on both sides of chunk boundaries and
// out of range, forward and backward, [V, C] rows whose bytes are not a multiple of the alignment.
TEST_F(EmbeddingChunkTest, ForcedChunksMatchReference) {
  for (auto [cols, dtype, max_chunk_bytes] :
       {std::tuple{33u, DType::f32, 4096ull}, std::tuple{896u, DType::bf16, 100000ull}}) {
    const uint32_t vocab = 1000;
    SCOPED_TRACE("C " + std::to_string(cols) + " " + dtype_name(dtype));
    const std::vector<int32_t> ids0{0,   1,    63,   64,       65, 127, 128,  // around the f32 case's 64-row chunks
                                    54,  55,   56,   110,                     // around the bf16 case's 55-row chunks
                                    999, 998,  500,  64,       0,  999,       // both ends, repeats
                                    -1,  1000, 5000, INT32_MIN};              // out of range: zero rows
    const uint32_t n = uint32_t(ids0.size());
    auto table0 = test::rounded(test::random_values(size_t(vocab) * cols, 8), dtype);
    auto table = test::tensor_from(dev(), {vocab, cols}, dtype, table0);
    auto ids = test::tensor_from_ints(dev(), {n}, ids0);
    auto y = test::poisoned(dev(), {n, cols}, DType::f32);
    vk::Recorder rec(dev());
    ops::embedding_forward(rec, y.t, table, ids, max_chunk_bytes);
    auto program = rec.finish();
    EXPECT_GT(program.dispatch_count(), 10u);
    program.run();
    std::vector<float> want(size_t(n) * cols);
    ops::ref::embedding_forward(want, table0, ids0, cols);
    test::expect_close(download(y.t), want, 0.0, "embedding_forward chunked", {n, cols});
    y.expect_guards_intact("embedding_forward chunked");

    auto dtable0 = test::random_values(size_t(vocab) * cols, 9);
    auto dy0 = test::random_values(size_t(n) * cols, 10);
    auto dtable = test::tensor_from(dev(), {vocab, cols}, DType::f32, dtable0);
    auto dy = test::tensor_from(dev(), {n, cols}, DType::f32, dy0);
    test::run(dev(), [&, max_chunk_bytes = max_chunk_bytes](vk::Recorder& r) {
      ops::embedding_backward(r, dtable, dy, ids, max_chunk_bytes);
    });
    auto want_dtable = dtable0;
    ops::ref::embedding_backward(want_dtable, dy0, ids0, cols);
    test::expect_close(download(dtable), want_dtable, 1e-5, "embedding_backward chunked", {vocab, cols});
  }
}

// A [37000, 1000] f32 table (148 MB), past lavapipe's 128 MiB binding limit: rows from both ends and
// around the first chunk's end, forward, then backward accumulating into the same tensor.
TEST_F(EmbeddingChunkTest, TablePastTheBindingLimit) {
  const uint32_t vocab = 37000, cols = 1000;
  const uint64_t row_bytes = cols * 4, max_range = dev().report().max_storage_range;
  if (max_range >= uint64_t(vocab) * row_bytes)
    GTEST_SKIP() << "this device binds " << max_range << " bytes; ForcedChunksMatchReference covers chunking";
  const uint64_t alignment = std::max<uint64_t>(dev().report().storage_alignment, 1);
  const uint64_t step = alignment / std::gcd(row_bytes, alignment);
  const int32_t first_chunk_end = int32_t(max_range / row_bytes / step * step);  // as the op splits
  auto value = [](int32_t r, uint32_t c) { return float(r) + float(c) / 1024.0f; };

  std::vector<float> table0(size_t(vocab) * cols);
  for (uint32_t r = 0; r < vocab; ++r)
    for (uint32_t c = 0; c < cols; ++c) table0[size_t(r) * cols + c] = value(int32_t(r), c);
  auto table = Tensor::empty(dev(), {vocab, cols}, DType::f32, "big embedding table");
  upload(table, table0);
  table0 = {};

  const int32_t v = int32_t(vocab), e = first_chunk_end;
  const std::vector<int32_t> ids0{0, 1, v - 1, v - 2, e - 2, e - 1, e, e + 1, v / 2, -1, v, v - 1, 0};
  const uint32_t n = uint32_t(ids0.size());
  auto ids = test::tensor_from_ints(dev(), {n}, ids0);
  auto y = test::poisoned(dev(), {n, cols}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) { ops::embedding_forward(rec, y.t, table, ids); });
  auto got = download(y.t);
  std::vector<float> want(size_t(n) * cols);
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t c = 0; c < cols; ++c)
      want[size_t(t) * cols + c] = ids0[t] >= 0 && ids0[t] < v ? value(ids0[t], c) : 0.0f;
  test::expect_close(got, want, 0.0, "embedding_forward big table", {n, cols});

  auto dy0 = test::random_values(size_t(n) * cols, 11);
  auto dy = test::tensor_from(dev(), {n, cols}, DType::f32, dy0);
  test::run(dev(), [&](vk::Recorder& rec) { ops::embedding_backward(rec, table, dy, ids); });
  for (int32_t r : {0, 1, 2, v - 1, v - 2, v - 3, e - 2, e - 1, e, e + 1, v / 2}) {
    std::vector<float> want_row(cols);
    for (uint32_t c = 0; c < cols; ++c) {
      float sum = 0;
      for (uint32_t t = 0; t < n; ++t)
        if (ids0[t] == r) sum += dy0[size_t(t) * cols + c];
      want_row[c] = value(r, c) + sum;
    }
    test::expect_close(download(table.slice_rows(uint64_t(r), uint64_t(r) + 1)), want_row, 0.0,
                       "embedding_backward big table row " + std::to_string(r), {cols});
  }
}

// The reference backward is the gradient of L = sum(dy * y(table)), by central differences in double.
TEST(EmbeddingReference, BackwardMatchesFiniteDifferences) {
  const uint32_t vocab = 5, cols = 3;
  const std::vector<int32_t> ids{2, 0, 2, 4, -1, 2, 5, 0};
  const size_t n = ids.size();
  std::vector<double> table(vocab * cols), dy(n * cols), y(n * cols), dtable(vocab * cols, 0.0);
  auto tr = test::random_values(table.size(), 12), dyr = test::random_values(dy.size(), 13);
  std::copy(tr.begin(), tr.end(), table.begin());
  std::copy(dyr.begin(), dyr.end(), dy.begin());
  ops::ref::embedding_backward(std::span<double>(dtable), dy, ids, cols);
  auto loss = [&](const std::vector<double>& at) {
    ops::ref::embedding_forward(std::span<double>(y), at, ids, cols);
    return std::inner_product(dy.begin(), dy.end(), y.begin(), 0.0);
  };
  const double h = 1e-4;
  for (size_t k = 0; k < table.size(); ++k) {
    auto tp = table, tm = table;
    tp[k] += h, tm[k] -= h;
    EXPECT_NEAR(dtable[k], (loss(tp) - loss(tm)) / (2 * h), 1e-9) << "element " << k;
  }
}

// gather_rows: the loss's compaction (rows picked from [M, C], then spread back with -1 for rows left out),
// against the reference gather; its errors name gather_rows.
TEST_F(EmbeddingChunkTest, GatherRowsPicksRows) {
  const uint32_t rows = 12, cols = 40;
  const std::vector<int32_t> picked{3, 0, 11, 7};
  const std::vector<int32_t> slots{1, -1, -1, 0, -1, -1, -1, 3, -1, -1, -1, 2};  // back: row 3 from slot 0 ...
  auto src0 = test::random_values(size_t(rows) * cols, 14);
  auto src = test::tensor_from(dev(), {rows, cols}, DType::f32, src0);
  auto picks = test::tensor_from_ints(dev(), {uint32_t(picked.size())}, picked);
  auto spread = test::tensor_from_ints(dev(), {rows}, slots);
  auto gathered = test::poisoned(dev(), {uint32_t(picked.size()), cols}, DType::f32);
  auto back = test::poisoned(dev(), {rows, cols}, DType::f32);
  test::run(dev(), [&](vk::Recorder& rec) {
    ops::gather_rows(rec, gathered.t, src, picks);
    ops::gather_rows(rec, back.t, gathered.t, spread);
  });
  std::vector<float> want(picked.size() * cols), want_back(size_t(rows) * cols);
  ops::ref::embedding_forward(want, src0, picked, cols);
  ops::ref::embedding_forward(want_back, want, slots, cols);
  test::expect_close(download(gathered.t), want, 0.0, "gather_rows", {uint32_t(picked.size()), cols});
  test::expect_close(download(back.t), want_back, 0.0, "gather_rows back", {rows, cols});
  gathered.expect_guards_intact("gather_rows");
  back.expect_guards_intact("gather_rows back");
  expect_error(
      dev(), [&](vk::Recorder& r) { ops::gather_rows(r, back.t, src, picks); }, "gather_rows");
}

TEST_F(EmbeddingChunkTest, BadInputsThrow) {
  auto table = Tensor::empty(dev(), {10, 4}, DType::f32);
  auto ids = test::tensor_from_ints(dev(), {3}, std::vector<int32_t>{0, 1, 2});
  auto ids_f32 = Tensor::empty(dev(), {3}, DType::f32);
  auto y = Tensor::empty(dev(), {3, 4}, DType::f32);
  auto y_wrong = Tensor::empty(dev(), {3, 5}, DType::f32);
  auto table3 = Tensor::empty(dev(), {2, 5, 4}, DType::f32);
  auto dtable_f16 = Tensor::empty(dev(), {10, 4}, DType::f16);
  auto no_columns = Tensor::empty(dev(), {10, 0}, DType::f32);
  auto y_no_columns = Tensor::empty(dev(), {3, 0}, DType::f32);
  expect_error(
      dev(), [&](vk::Recorder& r) { ops::embedding_forward(r, y, table, ids_f32); }, "embedding_forward");
  expect_error(
      dev(), [&](vk::Recorder& r) { ops::embedding_forward(r, y_wrong, table, ids); }, "embedding_forward");
  expect_error(
      dev(), [&](vk::Recorder& r) { ops::embedding_forward(r, y, table3, ids); }, "embedding_forward");
  expect_error(
      dev(), [&](vk::Recorder& r) { ops::embedding_forward(r, y, Tensor(), ids); }, "embedding_forward");
  expect_error(
      dev(), [&](vk::Recorder& r) { ops::embedding_backward(r, dtable_f16, y, ids); }, "embedding_backward");
  expect_error(
      dev(), [&](vk::Recorder& r) { ops::embedding_backward(r, table, y_wrong, ids); }, "embedding_backward");
}

}  // namespace
}  // namespace ls
