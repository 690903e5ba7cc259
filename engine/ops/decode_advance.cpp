#include "ops/decode_advance.h"

#include <string>
#include <tuple>

#include "ops/common.h"
#include "ops/sample.h"

namespace ls::ops {

namespace {
struct DecodeAdvanceParams {  // = Params in shaders/decode_advance.comp
  uint32_t k;
  uint32_t past_slot;
  uint32_t mark;
  uint32_t vocab;
};
}  // namespace

void decode_advance(vk::Recorder& rec, const Tensor& sampled, const Tensor& ids, const Tensor& positions,
                    const Tensor& step, uint32_t past_slot, const Tensor& rng, const Tensor& seen, bool mark,
                    uint32_t vocab, const Tensor& out_ids, uint32_t k) {
  const char* op = "decode_advance";
  for (const auto& [t, what, least] : {std::tuple{&sampled, "sampled", 1u}, std::tuple{&ids, "ids", 1u},
                                       std::tuple{&positions, "positions", 1u}, std::tuple{&step, "step", past_slot + 1},
                                       std::tuple{&rng, "rng", kSampleRngElems}, std::tuple{&out_ids, "out_ids", k + 1}}) {
    require(t->defined() && t->dtype() == DType::i32 && t->numel() >= least, op,
            std::string(what) + " must be i32 with at least " + std::to_string(least) + " elements, got " + t->describe());
  }
  require(seen.defined() && seen.dtype() == DType::i32 && seen.numel() >= sample_seen_words(vocab), op,
          "seen must be i32 [" + std::to_string(sample_seen_words(vocab)) + "], got " + seen.describe());
  rec.dispatch(vk::Kernel::decode_advance,
               {in(sampled), inout(ids), inout(positions), inout(step), inout(rng), inout(seen), out(out_ids)},
               DecodeAdvanceParams{.k = k, .past_slot = past_slot, .mark = mark ? 1u : 0u, .vocab = vocab}, {1});
}

namespace ref {
void decode_advance(int32_t sampled, std::span<int32_t> ids, std::span<int32_t> positions, std::span<int32_t> step,
                    uint32_t past_slot, std::span<int32_t> rng, std::span<int32_t> seen, bool mark, uint32_t vocab,
                    std::span<int32_t> out_ids, uint32_t k) {
  out_ids[k] = sampled;
  ids[0] = sampled;
  if (k > 0) {
    positions[0] += 1;
    step[past_slot] += 1;
  }
  rng[2] += 1;
  if (mark && sampled >= 0 && uint32_t(sampled) < vocab)
    seen[uint32_t(sampled) >> 5] |= int32_t(1u << (uint32_t(sampled) & 31u));
}
}  // namespace ref

}  // namespace ls::ops
