#include "ops/sample.h"

#include <cmath>

#include "ops/common.h"

namespace ls::ops {

namespace {
struct SampleParams {  // = Params in shaders/sample_common.glsl
  uint32_t vocab;
  uint32_t groups;
  uint32_t top_k;
  uint32_t top_p;            // top_p × 2^32
  float log_min_p;
  float inv_temperature;
  float penalty;
  uint32_t search;
  uint32_t level;
  uint32_t draws;
  uint32_t flags;
};
static_assert(sizeof(SampleParams) <= 128);
constexpr uint32_t kTopK = 1, kTopP = 2, kMinP = 4, kPenalty = 8;  // = the flags in sample_common.glsl
constexpr uint32_t kChunk = 1024;                                   // ids per workgroup (kChunk there)
constexpr uint32_t kHistWords = 2 * 4 * 256 * 3;

uint32_t groups_for(uint32_t vocab) { return ceil_div(vocab, kChunk); }

enum class Output { draws, mask };

void check(const char* op, const Tensor& out, Output what, const Tensor& work, const Tensor& logits,
           const Tensor& seen, const Tensor& rng, const SampleSettings& s) {
  require_dtype(logits, {DType::f32}, op, "logits");
  const uint64_t V = logits.numel();
  require(V > 0 && V <= (1u << 24), op, "logits is " + logits.describe() + "; expected 1 .. 2^24 values");
  require_dtype(out, {DType::i32}, op, what == Output::draws ? "ids" : "mask");
  if (what == Output::mask) require_numel(out, V, op, "mask");
  require(what == Output::mask || (out.numel() > 0 && out.numel() <= kSampleMaxDraws), op,
          "ids is " + out.describe() + "; expected 1 .. " + std::to_string(kSampleMaxDraws) + " ids");
  require(what == Output::mask || s.temperature > 0.0f || out.numel() == 1, op, "greedy sampling draws one id");
  require_row_vector(seen, DType::i32, sample_seen_words(uint32_t(V)), op, "seen");
  require_row_vector(rng, DType::i32, kSampleRngElems, op, "rng");
  require(work.dtype() == DType::i32 && work.numel() >= sample_work_elems(uint32_t(V)), op,
          "work is " + work.describe() + "; expected at least " + std::to_string(sample_work_elems(uint32_t(V))) + " i32");
  require(s.temperature >= 0.0f && s.top_p > 0.0f && s.top_p <= 1.0f && s.min_p >= 0.0f && s.min_p < 1.0f &&
              s.repetition_penalty > 0.0f,
          op, "sampling options out of range (infer::validate says which)");
}

SampleParams params_for(uint32_t vocab, uint32_t draws, const SampleSettings& s) {
  const bool greedy = s.temperature <= 0.0f;
  uint32_t flags = s.repetition_penalty != 1.0f ? kPenalty : 0;
  if (!greedy) {
    if (s.top_k > 0 && s.top_k < vocab) flags |= kTopK;
    if (s.top_p < 1.0f) flags |= kTopP;
    if (s.min_p > 0.0f) flags |= kMinP;
  }
  return SampleParams{.vocab = vocab,
                      .groups = groups_for(vocab),
                      .top_k = s.top_k,
                      // top_p in 32-bit fixed point when on (top_p < 1, so < 2^32); 1 itself, off, has no such
                      // value: converting 2^32 to uint32 is undefined behaviour (UBSan, the whole asan suite)
                      .top_p = s.top_p < 1.0f ? uint32_t(std::ldexp(double(s.top_p), 32)) : UINT32_MAX,
                      .log_min_p = s.min_p > 0.0f ? std::log(s.min_p) : 0.0f,  // as the CPU: float log
                      .inv_temperature = greedy ? 1.0f : 1.0f / s.temperature,
                      .penalty = s.repetition_penalty,
                      .search = 0,
                      .level = 0,
                      .draws = draws,
                      .flags = flags};
}

// Binding order of every sample_* kernel (shaders/sample_common.glsl).
struct Bindings {
  vk::Use logits, seen, rng, work, out;
};

// The maximum, the descents the options need, the draw's partial sums, then `last` (sample_draw or
// sample_kept); greedy: the maximum and sample_greedy.
void record(vk::Recorder& rec, const Bindings& b, SampleParams p, vk::Kernel last) {
  auto dispatch = [&](vk::Kernel k, uint32_t groups) {
    rec.dispatch(k, {b.logits, b.seen, b.rng, b.work, b.out}, p, {groups, 1, 1});
  };
  dispatch(vk::Kernel::sample_max, p.groups);
  if (last == vk::Kernel::sample_greedy) return dispatch(vk::Kernel::sample_greedy, 1);
  const bool top_k = p.flags & kTopK, top_p = p.flags & kTopP;
  if (top_k || top_p) dispatch(vk::Kernel::sample_hist, p.groups);  // byte 0: both descents share it
  for (uint32_t search : {0u, 1u}) {
    if (!(search == 0 ? top_k : top_p)) continue;
    p.search = search;
    for (p.level = 1; p.level < 4; ++p.level) dispatch(vk::Kernel::sample_hist, p.groups);
  }
  dispatch(vk::Kernel::sample_partials, p.groups);
  dispatch(last, p.groups);
}
}  // namespace

uint32_t sample_seen_words(uint32_t vocab) { return ceil_div(vocab, 32); }

void sample_mark_seen(std::span<int32_t> seen, std::span<const int32_t> ids, uint32_t vocab) {
  for (int32_t id : ids)
    if (id >= 0 && uint32_t(id) < vocab) seen[uint32_t(id) / 32] |= int32_t(1u << (uint32_t(id) % 32));
}

uint32_t sample_work_elems(uint32_t vocab) { return 6 * groups_for(vocab) + kHistWords + 80; }

void sample_forward(vk::Recorder& rec, const Tensor& ids, const Tensor& work, const Tensor& logits,
                    const Tensor& seen, const Tensor& rng, const SampleSettings& settings) {
  check("sample_forward", ids, Output::draws, work, logits, seen, rng, settings);
  const SampleParams p = params_for(uint32_t(logits.numel()), uint32_t(ids.numel()), settings);
  record(rec, {in(logits), in(seen), in(rng), inout(work), out(ids)}, p,
         settings.temperature > 0.0f ? vk::Kernel::sample_draw : vk::Kernel::sample_greedy);
}

void sample_kept(vk::Recorder& rec, const Tensor& mask, const Tensor& work, const Tensor& logits,
                 const Tensor& seen, const Tensor& rng, const SampleSettings& settings) {
  check("sample_kept", mask, Output::mask, work, logits, seen, rng, settings);
  require(settings.temperature > 0.0f, "sample_kept", "greedy sampling keeps no set");
  record(rec, {in(logits), in(seen), in(rng), inout(work), out(mask)},
         params_for(uint32_t(logits.numel()), 0, settings), vk::Kernel::sample_kept);
}

}  // namespace ls::ops
