#include "model/architecture.h"

#include <set>
#include <string_view>

#include "error.h"
#include "tensor/tensor.h"

namespace ls::model {
namespace {

constexpr size_t kMaxListed = 10;

}  // namespace

uint64_t ExpectedTensor::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

std::vector<ExpectedTensor> expected_tensors(const ModelSpec& s, const std::string& prefix,
                                             const std::string& lm_head_name) {
  const uint64_t V = s.vocab, C = s.hidden;
  std::vector<ExpectedTensor> t;
  t.push_back({.name = prefix + "embed_tokens.weight", .shape = {V, C}, .role = TensorRole::embed});
  for (uint32_t i = 0; i < s.layers.size(); ++i) {
    for (const ModuleSpec& m : s.layers[i].modules) {
      const std::string name = prefix + "layers." + std::to_string(i) + "." + m.name;
      if (m.norm) {
        t.push_back({.name = name + ".weight", .shape = {m.out}, .role = TensorRole::layer_norm, .layer = i,
                     .norm = *m.norm});
        continue;
      }
      t.push_back({.name = name + ".weight", .shape = {m.out, m.in}, .role = TensorRole::weight, .layer = i,
                   .target = *m.target});
      if (m.bias)
        t.push_back({.name = name + ".bias", .shape = {m.out}, .role = TensorRole::bias, .layer = i, .target = *m.target});
    }
  }
  t.push_back({.name = prefix + "norm.weight", .shape = {C}, .role = TensorRole::final_norm});
  if (!s.tied) t.push_back({.name = lm_head_name, .shape = {V, C}, .role = TensorRole::lm_head});
  return t;
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  return expected_tensors(model_spec(c), c.weight_prefix, c.lm_head_name);
}

void check_weights(const ModelConfig& c, const SafeTensors& st) {
  std::vector<std::string> problems;
  std::set<std::string_view> expected_names;
  const std::vector<ExpectedTensor> expected = expected_tensors(c);
  for (const ExpectedTensor& e : expected) {
    expected_names.insert(e.name);
    const TensorInfo* t = st.find(e.name);
    if (!t)
      problems.push_back("missing " + e.name + " " + shape_string(e.shape));
    else if (t->shape != e.shape)
      problems.push_back(e.name + " has shape " + shape_string(t->shape) + ", expected " + shape_string(e.shape));
    else if (t->dtype == DType::i32)
      problems.push_back(e.name + " is I32; weights must be F32, F16 or BF16");
  }
  const std::vector<uint64_t> lm_head_shape = {c.vocab_size, c.hidden_size};
  for (const TensorInfo& t : st.tensors()) {
    if (expected_names.contains(t.name) || t.name.ends_with(".rotary_emb.inv_freq")) continue;
    // A multimodal folder's other towers (vision, projector) are not ours to read.
    if (c.multimodal && !t.name.starts_with(c.weight_prefix) && t.name != c.lm_head_name) continue;
    if (c.tie_word_embeddings && t.name == c.lm_head_name) {
      if (t.shape != lm_head_shape)
        problems.push_back(c.lm_head_name + " (tied, ignored) has shape " + shape_string(t.shape) + ", expected " +
                           shape_string(lm_head_shape));
      continue;
    }
    problems.push_back("unexpected " + t.name + " " + shape_string(t.shape));
  }
  if (problems.empty()) return;

  std::string msg = st.path().string() + ": weights do not match the " + c.architecture_name + " config (" +
                    std::to_string(problems.size()) + (problems.size() == 1 ? " problem): " : " problems): ");
  for (size_t i = 0; i < problems.size() && i < kMaxListed; ++i) msg += (i ? "; " : "") + problems[i];
  if (problems.size() > kMaxListed) msg += "; and " + std::to_string(problems.size() - kMaxListed) + " more";
  throw Error(msg);
}

}  // namespace ls::model
