#include "model/gguf_types.h"

#include "error.h"

namespace ls::gguf {

namespace {
struct Known {
  TensorType type;
  TypeTraits traits;
};
// ggml.c's type_traits for the types above.
constexpr Known kKnown[] = {
    {TensorType::f32, {"f32", 1, 4}},          {TensorType::f16, {"f16", 1, 2}},
    {TensorType::q4_0, {"q4_0", 32, 18}},      {TensorType::q5_0, {"q5_0", 32, 22}},
    {TensorType::q8_0, {"q8_0", 32, 34}},
    {TensorType::q4_k, {"q4_K", 256, 144}},    {TensorType::q5_k, {"q5_K", 256, 176}},
    {TensorType::q6_k, {"q6_K", 256, 210}},    {TensorType::bf16, {"bf16", 1, 2}},
};
}  // namespace

const TypeTraits* type_traits(uint32_t type) {
  for (const Known& k : kKnown)
    if (uint32_t(k.type) == type) return &k.traits;
  return nullptr;
}

const TypeTraits& type_traits(TensorType type) { return *type_traits(uint32_t(type)); }

uint64_t tensor_bytes(TensorType type, std::span<const uint64_t> ne, std::string_view name) {
  const TypeTraits& t = type_traits(type);
  if (ne.empty()) throw Error("GGUF tensor \"" + std::string(name) + "\" has no dimensions");
  if (ne[0] % t.block != 0)
    throw Error("GGUF tensor \"" + std::string(name) + "\": a row of " + std::to_string(ne[0]) +
                " elements is not a whole number of " + t.name + " blocks of " + std::to_string(t.block));
  uint64_t n = ne[0] / t.block * t.block_bytes;
  for (size_t i = 1; i < ne.size(); ++i) n *= ne[i];
  return n;
}

}  // namespace ls::gguf
