#pragma once
// The push constants of shaders/attention_group_sum.comp, which both attention paths dispatch: the
// products path sums per-query-head key/value gradients over each group (ops/attention_products.cpp), the
// flash backward also sums its split partials over slices (ops/attention_flash.cpp).
#include <cstdint>

namespace ls::ops::detail {

struct GroupSumParams {  // = Params in shaders/attention_group_sum.comp
  uint32_t total, T, KV, D, G, slices;
};
static_assert(sizeof(GroupSumParams) <= 128);

}  // namespace ls::ops::detail
