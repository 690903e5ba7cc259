#include "model/architecture.h"

#include <set>
#include <string_view>

#include "error.h"
#include "tensor/tensor.h"

namespace ls::model {
namespace {

constexpr size_t kMaxListed = 10;

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  const uint64_t V = c.vocab_size, C = c.hidden_size, I = c.intermediate_size, Q = uint64_t(c.num_heads) * c.head_dim,
                 KV = uint64_t(c.num_kv_heads) * c.head_dim;
  std::vector<ExpectedTensor> t;
  t.push_back({"model.embed_tokens.weight", {V, C}});
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {C}});
    const struct {
      const char* name;
      uint64_t out, in;
      bool bias;
    } linears[] = {
        {"self_attn.q_proj", Q, C, c.qkv_bias},
        {"self_attn.k_proj", KV, C, c.qkv_bias},
        {"self_attn.v_proj", KV, C, c.qkv_bias},
        {"self_attn.o_proj", C, Q, c.o_bias},
    };
    for (const auto& l : linears) {
      t.push_back({p + l.name + ".weight", {l.out, l.in}});
      if (l.bias) t.push_back({p + l.name + ".bias", {l.out}});
    }
    t.push_back({p + "post_attention_layernorm.weight", {C}});
    const struct {
      const char* name;
      uint64_t out, in;
    } mlp[] = {{"mlp.gate_proj", I, C}, {"mlp.up_proj", I, C}, {"mlp.down_proj", C, I}};
    for (const auto& l : mlp) {
      t.push_back({p + l.name + ".weight", {l.out, l.in}});
      if (c.mlp_bias) t.push_back({p + l.name + ".bias", {l.out}});
    }
  }
  t.push_back({"model.norm.weight", {C}});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {V, C}});
  return t;
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
    if (c.tie_word_embeddings && t.name == "lm_head.weight") {
      if (t.shape != lm_head_shape)
        problems.push_back("lm_head.weight (tied, ignored) has shape " + shape_string(t.shape) + ", expected " +
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
