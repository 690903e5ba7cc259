// The recorder: barrier placement (on the hazard tracker alone and on real recordings), replay
// determinism, bad dispatches.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "error.h"
#include "support/testing.h"

namespace ls {
namespace {

using Span = vk::HazardTracker::Span;

TEST(HazardTracker, IndependentDispatchesNeedNoBarrier) {
  vk::HazardTracker h;
  Span a{1, 0, 100}, b{1, 100, 200}, c{2, 0, 100};
  EXPECT_FALSE(h.note(std::vector{a}, std::vector{b}));
  EXPECT_FALSE(h.note(std::vector{a}, std::vector{c}));  // read a again, write another block
}

TEST(HazardTracker, ReadAfterWrite) {
  vk::HazardTracker h;
  EXPECT_FALSE(h.note({}, std::vector{Span{1, 0, 64}}));
  EXPECT_TRUE(h.note(std::vector{Span{1, 32, 40}}, {}));   // overlapping read
}

TEST(HazardTracker, WriteAfterWriteAndWriteAfterRead) {
  vk::HazardTracker h;
  EXPECT_FALSE(h.note({}, std::vector{Span{1, 0, 64}}));
  EXPECT_TRUE(h.note({}, std::vector{Span{1, 63, 64}}));   // WAW
  vk::HazardTracker g;
  EXPECT_FALSE(g.note(std::vector{Span{3, 0, 64}}, {}));
  EXPECT_TRUE(g.note({}, std::vector{Span{3, 0, 1}}));     // WAR
}

TEST(HazardTracker, AdjacentRangesDoNotConflict) {
  vk::HazardTracker h;
  EXPECT_FALSE(h.note({}, std::vector{Span{1, 0, 64}}));
  EXPECT_FALSE(h.note(std::vector{Span{1, 64, 128}}, std::vector{Span{1, 128, 256}}));
  EXPECT_FALSE(h.note(std::vector{Span{2, 0, 64}}, {}));  // same offsets, another block
}

TEST(HazardTracker, BarrierForgetsWhatItOrdered) {
  vk::HazardTracker h;
  EXPECT_FALSE(h.note({}, std::vector{Span{1, 0, 64}}));
  EXPECT_TRUE(h.note(std::vector{Span{1, 0, 64}}, std::vector{Span{1, 64, 128}}));
  // After the barrier only the second dispatch is pending: reading [0,64) again is free.
  EXPECT_FALSE(h.note(std::vector{Span{1, 0, 64}}, {}));
  EXPECT_TRUE(h.note(std::vector{Span{1, 64, 65}}, {}));
}

class RecorderTest : public test::GpuTest {};

TEST_F(RecorderTest, BarriersExactlyWhereDataFlows) {
  auto& d = dev();
  auto a = test::tensor_from(d, {1000}, DType::f32, test::random_values(1000, 1));
  auto b = test::tensor_from(d, {1000}, DType::f32, test::random_values(1000, 2));
  auto c = Tensor::empty(d, {1000}, DType::f32);
  auto e = Tensor::empty(d, {1000}, DType::f32);
  auto f = Tensor::empty(d, {1000}, DType::f32);
  vk::Recorder rec(d);
  ops::add_forward(rec, c, a, b);      // 0: first
  ops::scale_forward(rec, e, a, 2.f);  // 1: reads a (read-read is fine), writes e: no barrier
  ops::add_forward(rec, f, c, e);      // 2: reads c and e written above: barrier
  ops::scale_forward(rec, a, b, 3.f);  // 3: writes a, which 0 and 1 read before the last barrier... ordered already: none
  ops::scale_forward(rec, b, f, 1.f);  // 4: reads f (written by 2, unfenced): barrier
  ops::scale_forward(rec, c, a, 1.f);  // 5: reads a written by 3 (fenced by 4's barrier): none
  auto program = rec.finish();
  std::vector<bool> barriers;
  for (const auto& s : program.plan()) barriers.push_back(s.barrier_before);
  EXPECT_EQ(barriers, (std::vector<bool>{false, false, true, false, true, false}));
  EXPECT_EQ(program.barrier_count(), 2u);
}

// The remembered copy (ops/matmul.cpp converts an input once for the products that read it): found for
// exactly its source range and key; forgotten when a dispatch writes the source or the copy; replaced by the
// next one remembered. Reads of either keep it.
TEST_F(RecorderTest, RememberedCopyLastsUntilItsSourceOrItselfIsWritten) {
  auto& d = dev();
  auto src = test::tensor_from(d, {256, 1}, DType::f32, test::random_values(256, 1));
  auto other = test::tensor_from(d, {256, 1}, DType::f32, test::random_values(256, 2));
  auto sink = Tensor::empty(d, {256, 1}, DType::f32);
  vk::Recorder rec(d);
  std::shared_ptr<vk::Allocation> copy = rec.scratch(1024, vk::Recorder::kScratchCm2A);
  const Tensor copy_t = Tensor::view(d, copy, {256, 1}, DType::f32);
  ops::scale_forward(rec, copy_t, src, 1.f);  // the "conversion"
  rec.remember_copy(src.range(), 7, copy);
  EXPECT_EQ(rec.find_copy(src.range(), 7), copy);
  EXPECT_EQ(rec.find_copy(src.range(), 8), nullptr) << "another key";
  EXPECT_EQ(rec.find_copy(src.slice_rows(0, 128).range(), 7), nullptr) << "part of the range";
  EXPECT_EQ(rec.find_copy(other.range(), 7), nullptr) << "another tensor";
  ops::add_forward(rec, sink, src, copy_t);  // reads both: still valid
  EXPECT_EQ(rec.find_copy(src.range(), 7), copy);
  ops::scale_forward(rec, src.slice_rows(128, 256), other.slice_rows(0, 128), 2.f);  // writes half the source
  EXPECT_EQ(rec.find_copy(src.range(), 7), nullptr);

  rec.remember_copy(src.range(), 7, copy);
  ops::scale_forward(rec, copy_t, other, 1.f);  // writes the copy
  EXPECT_EQ(rec.find_copy(src.range(), 7), nullptr);

  rec.remember_copy(src.range(), 7, copy);
  rec.remember_copy(other.range(), 7, copy);  // the next copy replaces it
  EXPECT_EQ(rec.find_copy(src.range(), 7), nullptr);
  EXPECT_EQ(rec.find_copy(other.range(), 7), copy);
  rec.finish().run();
}

// Split-K partial sums: small requests take the two ring slots in turn (two products recorded one after another
// get different buffers, so no barrier orders the second after the first's reduce); larger ones take
// kScratchSplitK; each slot grows to its largest request. Two products through the ring need no barrier.
TEST_F(RecorderTest, SplitScratchTakesTurnsForSmallRequests) {
  auto& d = dev();
  vk::Recorder rec(d);
  const VkDeviceSize small = 4096, large = vk::Recorder::kSplitRingBytes + 4096;
  const auto a = rec.split_scratch(small), b = rec.split_scratch(small), c = rec.split_scratch(small);
  EXPECT_NE(a, b) << "consecutive small requests, different slots";
  EXPECT_EQ(a, c) << "two slots in turn";
  EXPECT_EQ(rec.split_scratch(large), rec.scratch(large, vk::Recorder::kScratchSplitK)) << "a large one";
  EXPECT_NE(rec.split_scratch(large), a);
  EXPECT_EQ(rec.split_scratch(small), b);
  EXPECT_GE(rec.split_scratch(2 * small)->size(), 2 * small) << "grown to the request";

  // Two writes, each to its own turn's buffer, then their reads: one barrier, before the reads.
  auto src = test::tensor_from(d, {256, 1}, DType::f32, test::random_values(256, 3));
  const Tensor p1 = Tensor::view(d, rec.split_scratch(1024), {256, 1}, DType::f32);
  const Tensor p2 = Tensor::view(d, rec.split_scratch(1024), {256, 1}, DType::f32);
  auto s1 = Tensor::empty(d, {256, 1}, DType::f32), s2 = Tensor::empty(d, {256, 1}, DType::f32);
  ops::scale_forward(rec, p1, src, 2.f);
  ops::scale_forward(rec, p2, src, 3.f);
  ops::scale_forward(rec, s1, p1, 1.f);
  ops::scale_forward(rec, s2, p2, 1.f);
  vk::Program prog = rec.finish();
  const auto& plan = prog.plan();
  ASSERT_GE(plan.size(), 4u);
  const size_t n = plan.size();
  EXPECT_FALSE(plan[n - 3].barrier_before) << "the second write shares the first's stage";
  EXPECT_TRUE(plan[n - 2].barrier_before);
  EXPECT_FALSE(plan[n - 1].barrier_before);
  prog.run();
  const std::vector<float> x = download(src), y1 = download(s1), y2 = download(s2);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y1[i], 2.f * x[i]);
    EXPECT_EQ(y2[i], 3.f * x[i]);
  }
}

// The counters of split products that add up their own slices (ops/matmul.cpp's coopmat2 path): the first request
// records one dispatch zeroing every slot, each run of the program; requests take the slots in turn.
TEST_F(RecorderTest, TileCountersAreZeroedEachRunAndTakeTurns) {
  auto& d = dev();
  vk::Recorder rec(d);
  EXPECT_THROW(rec.tile_counters(0), Error);
  EXPECT_THROW(rec.tile_counters(vk::Recorder::kCounterWords + 1), Error);
  const VkDeviceSize slot = VkDeviceSize(vk::Recorder::kCounterWords) * 4;
  const vk::BufferRange first = rec.tile_counters(10);
  EXPECT_EQ(first.offset, 0u);
  EXPECT_EQ(first.size, 40u);
  for (uint32_t i = 1; i < vk::Recorder::kCounterSlots; ++i) {
    const vk::BufferRange r = rec.tile_counters(vk::Recorder::kCounterWords);
    EXPECT_EQ(r.alloc, first.alloc);
    EXPECT_EQ(r.offset, i * slot) << "request " << i;
  }
  EXPECT_EQ(rec.tile_counters(3).offset, 0u) << "after the last slot, the first again";
  vk::Program prog = rec.finish();
  ASSERT_EQ(prog.dispatch_count(), 1u) << "one zeroing dispatch, at the first request";
  const uint32_t words = vk::Recorder::kCounterSlots * vk::Recorder::kCounterWords;
  const Tensor all = Tensor::view(d, std::const_pointer_cast<vk::Allocation>(first.alloc), {words}, DType::i32);
  for (int run = 0; run < 2; ++run) {
    upload(all, std::vector<int32_t>(words, 7));
    prog.run();
    const std::vector<float> counts = download(all);
    EXPECT_EQ(std::count(counts.begin(), counts.end(), 0.0f), std::ptrdiff_t(words)) << "run " << run;
  }
}

// A DeferScope holds back split products' reduces to its end: two split products recorded one after another run
// their slices in one stage and their reduces in the next (2 barriers-separated stages, not 4), each product's
// partial sums in a buffer of its own, with the same results as recorded plainly. Inside the scope, a dispatch
// reading what a held-back reduce writes is refused; an inner scope's end records nothing.
TEST_F(RecorderTest, DeferScopePutsSplitProductsSideBySide) {
  if (const char* v = std::getenv("LORASTUDIO_DEFER_REDUCES"); v && std::string_view(v) == "0")
    GTEST_SKIP() << "LORASTUDIO_DEFER_REDUCES=0 turns the scopes off";
  auto& d = dev();
  const uint32_t M = 64, N = 64, K = 4096;  // one output tile and a long reduction: split on every device
  const auto x0 = test::rounded(test::random_values(size_t(M) * K, 1), DType::f32);
  const auto w1v = test::rounded(test::random_values(size_t(N) * K, 2), DType::bf16);
  const auto w2v = test::rounded(test::random_values(size_t(N) * K, 3), DType::bf16);
  auto x = test::tensor_from(d, {M, K}, DType::f32, x0);
  auto w1 = test::tensor_from(d, {N, K}, DType::bf16, w1v), w2 = test::tensor_from(d, {N, K}, DType::bf16, w2v);
  auto y1 = Tensor::empty(d, {M, N}, DType::f32), y2 = Tensor::empty(d, {M, N}, DType::f32);
  auto plain1 = Tensor::empty(d, {M, N}, DType::f32), plain2 = Tensor::empty(d, {M, N}, DType::f32);
  vk::Recorder plain_rec(d);
  ops::matmul_forward(plain_rec, plain1, x, w1, Tensor(), false);
  ops::matmul_forward(plain_rec, plain2, x, w2, Tensor(), false);
  vk::Program plain = plain_rec.finish();
  ASSERT_GT(plain.dispatch_count(), 2u) << "the products are not split here; the test needs them split";
  plain.run();

  vk::Recorder rec(d);
  {
    vk::Recorder::DeferScope outer(rec);
    {
      vk::Recorder::DeferScope inner(rec);
      ops::matmul_forward(rec, y1, x, w1, Tensor(), false);
    }
    EXPECT_TRUE(rec.deferring());
    ops::matmul_forward(rec, y2, x, w2, Tensor(), false);
    auto z = Tensor::empty(d, {M, N}, DType::f32);
    EXPECT_THROW(ops::scale_forward(rec, z, y1, 1.f), Error) << "y1 is not written until the scope ends";
  }
  EXPECT_FALSE(rec.deferring());
  vk::Program prog = rec.finish();
  EXPECT_EQ(prog.dispatch_count(), plain.dispatch_count());
  EXPECT_LT(prog.barrier_count(), plain.barrier_count());
  // The reduces come last, together.
  const auto& plan = prog.plan();
  const size_t n = plan.size();
  ASSERT_GE(n, 4u);
  EXPECT_NE(plan[n - 1].name.find("splitk_reduce"), std::string::npos) << plan[n - 1].name;
  EXPECT_NE(plan[n - 2].name.find("splitk_reduce"), std::string::npos) << plan[n - 2].name;
  EXPECT_TRUE(plan[n - 2].barrier_before);
  EXPECT_FALSE(plan[n - 1].barrier_before) << "the reduces share a stage: their partial sums are apart";
  prog.run();
  EXPECT_EQ(download(y1), download(plain1));
  EXPECT_EQ(download(y2), download(plain2));
}

// A ScheduleScope records its dispatches in fewest stages: two chains recorded one after the other (x·2·3·5, then
// y·7·11) run side by side, a write to x waits only for the read of x it follows, and the sum of both chains comes
// last; the results are those of the plain order, in fewer barriers. An inner scope's end records nothing, and
// finish() inside a scope is refused.
TEST_F(RecorderTest, ScheduleScopeRecordsInFewestStages) {
  if (const char* v = std::getenv("LORASTUDIO_SCHEDULE"); v && std::string_view(v) == "0")
    GTEST_SKIP() << "LORASTUDIO_SCHEDULE=0 turns the scopes off";
  auto& d = dev();
  const uint32_t n = 3001;
  const auto x0 = test::random_values(n, 11), y0 = test::random_values(n, 12);
  struct Run {
    Tensor x, y, a1, a2, a3, b1, b2, z;
  };
  auto make = [&] {
    Run r{test::tensor_from(d, {n}, DType::f32, x0), test::tensor_from(d, {n}, DType::f32, y0)};
    for (Tensor* t : {&r.a1, &r.a2, &r.a3, &r.b1, &r.b2, &r.z}) *t = Tensor::empty(d, {n}, DType::f32);
    return r;
  };
  auto record = [&](vk::Recorder& rec, const Run& r) {
    auto step = [&](const char* name, auto&& op) {
      vk::Recorder::Label label(rec, name);
      op();
    };
    step("a1", [&] { ops::scale_forward(rec, r.a1, r.x, 2.f); });
    step("a2", [&] { ops::scale_forward(rec, r.a2, r.a1, 3.f); });
    step("a3", [&] { ops::scale_forward(rec, r.a3, r.a2, 5.f); });
    step("b1", [&] { ops::scale_forward(rec, r.b1, r.y, 7.f); });
    step("b2", [&] { ops::scale_forward(rec, r.b2, r.b1, 11.f); });
    step("xw", [&] { ops::scale_forward(rec, r.x, r.y, 13.f); });  // after a1 has read x
    step("z", [&] { ops::add_forward(rec, r.z, r.a3, r.b2); });
  };
  Run plain_run = make(), run = make();
  vk::Recorder plain_rec(d);
  record(plain_rec, plain_run);
  vk::Program plain = plain_rec.finish();
  plain.run();

  vk::Recorder rec(d);
  {
    vk::Recorder::ScheduleScope outer(rec);
    {
      vk::Recorder::ScheduleScope inner(rec);
      record(rec, run);
    }
    EXPECT_THROW(rec.finish(), Error) << "finish() inside a ScheduleScope";
  }
  vk::Program prog = rec.finish();
  std::vector<std::string> order;
  std::vector<bool> barriers;
  for (const auto& s : prog.plan()) order.push_back(s.name), barriers.push_back(s.barrier_before);
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "a2", "b2", "xw", "a3", "z"}));
  EXPECT_EQ(barriers, (std::vector<bool>{false, false, true, false, false, true, true}));
  EXPECT_LT(prog.barrier_count(), plain.barrier_count());
  prog.run();
  for (auto [got, want] : {std::pair{run.z, plain_run.z}, {run.x, plain_run.x}, {run.a3, plain_run.a3}})
    EXPECT_EQ(download(got), download(want));
  std::vector<float> z(n);
  for (uint32_t i = 0; i < n; ++i) z[i] = x0[i] * 2.f * 3.f * 5.f + y0[i] * 7.f * 11.f;
  test::expect_close(download(run.z), z, 1e-5, "z: both chains, x read before it was written");
}

// In a ScheduleScope small split products take scratch of their own (vk::Recorder::split_scratch): three LoRA-sized
// weight gradients (dB [896, 8] += dyᵀ·t over 512 rows, split over K on the skinny kernel) recorded one after
// another run their slices in one stage and their reduces in the next. Through the two ring slots the third's
// slices waited for the first's reduce. The same bits as recorded without the scope.
TEST_F(RecorderTest, ScheduleScopeGivesSmallSplitProductsScratchOfTheirOwn) {
  if (const char* v = std::getenv("LORASTUDIO_SCHEDULE"); v && std::string_view(v) == "0")
    GTEST_SKIP() << "LORASTUDIO_SCHEDULE=0 turns the scopes off";
  auto& d = dev();
  const uint32_t M = 512, N = 896, r = 8;
  std::vector<Tensor> dy, t;
  for (uint32_t i = 0; i < 3; ++i) {
    dy.push_back(test::tensor_from(d, {M, N}, DType::f32, test::random_values(size_t(M) * N, 40 + i)));
    t.push_back(test::tensor_from(d, {M, r}, DType::f32, test::random_values(size_t(M) * r, 50 + i)));
  }
  const std::vector<float> g0 = test::random_values(size_t(N) * r, 60);
  auto grads = [&](bool scoped) {
    std::vector<Tensor> g;
    for (uint32_t i = 0; i < 3; ++i) g.push_back(test::tensor_from(d, {N, r}, DType::f32, g0));
    vk::Recorder rec(d);
    {
      std::optional<vk::Recorder::ScheduleScope> scope;
      if (scoped) scope.emplace(rec);
      for (uint32_t i = 0; i < 3; ++i) ops::matmul_backward_w(rec, g[i], dy[i], t[i], 0.5f);
    }
    vk::Program prog = rec.finish();
    prog.run();
    std::vector<std::vector<float>> out;
    for (const Tensor& x : g) out.push_back(download(x));
    return std::pair{out, prog.barrier_count()};
  };
  const auto [plain, plain_barriers] = grads(false);
  const auto [scoped, scoped_barriers] = grads(true);
  EXPECT_EQ(scoped, plain);
  EXPECT_EQ(scoped_barriers, 1u) << "the three products' slices, a barrier, their reduces";
  EXPECT_GT(plain_barriers, scoped_barriers);
}

TEST_F(RecorderTest, ReplayedHundredTimesGivesIdenticalResults) {
  auto& d = dev();
  const uint32_t n = 4099;
  auto x0 = test::random_values(n, 3);
  auto x = test::tensor_from(d, {n}, DType::f32, x0);
  auto y = Tensor::empty(d, {n}, DType::f32);
  auto z = Tensor::empty(d, {n}, DType::f32);
  vk::Recorder rec(d);
  ops::scale_forward(rec, y, x, 1.5f);
  ops::add_forward(rec, z, y, x);
  auto program = rec.finish();
  program.run();
  auto first = download(z);
  std::vector<float> want(n);
  for (uint32_t i = 0; i < n; ++i) want[i] = 1.5f * x0[i] + x0[i];
  test::expect_close(first, want, 1e-6, "z after one run");
  for (int i = 0; i < 99; ++i) program.run();
  EXPECT_EQ(download(z), first);
  // Replay sees new input values: the program binds buffers, not values.
  auto x1 = test::random_values(n, 4);
  upload(x, std::span<const float>(x1));
  program.run();
  for (uint32_t i = 0; i < n; ++i) want[i] = 1.5f * x1[i] + x1[i];
  test::expect_close(download(z), want, 1e-6, "z after new input");
}

TEST_F(RecorderTest, ProfiledProgramReportsTimePerDispatch) {
  auto& d = dev();
  auto x = test::tensor_from(d, {4096}, DType::f32, test::random_values(4096, 5));
  auto y = Tensor::empty(d, {4096}, DType::f32);
  vk::Recorder rec(d, {.profile = true});
  {
    vk::Recorder::Label label(rec, "first");
    ops::scale_forward(rec, y, x, 2.f);
  }
  ops::add_forward(rec, y, y, x);
  auto program = rec.finish();
  program.run();
  auto t = program.timings();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "first");
  EXPECT_EQ(t[1].name, "add_f32");
  for (const auto& e : t) EXPECT_GT(e.ns, 0.0) << e.name;
}

TEST_F(RecorderTest, BadInputsRaiseErrorsNamingTheOp) {
  auto& d = dev();
  auto a = Tensor::empty(d, {4, 5}, DType::f32);
  auto b = Tensor::empty(d, {5, 4}, DType::f32);
  auto h = Tensor::empty(d, {4, 5}, DType::f16);
  auto i = Tensor::empty(d, {4, 5}, DType::i32);
  vk::Recorder rec(d);
  try {
    ops::add_forward(rec, a, a, b);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add_forward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[5, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::add_forward(rec, a, a, h), Error);
  EXPECT_THROW(ops::scale_forward(rec, i, i, 1.f), Error);
  EXPECT_THROW(ops::add_forward(rec, a, a, Tensor()), Error);
}

TEST_F(RecorderTest, MemoryIsReusedAfterFree) {
  auto& d = dev();
  auto before = d.memory().stats();
  {
    auto big = Tensor::empty(d, {1u << 20}, DType::f32);
    EXPECT_GT(d.memory().stats().used_bytes, before.used_bytes);
  }
  EXPECT_EQ(d.memory().stats().used_bytes, before.used_bytes);
  EXPECT_EQ(d.memory().stats().allocations, before.allocations);
}

}  // namespace
}  // namespace ls
