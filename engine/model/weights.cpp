#include "model/weights.h"

#include "error.h"
#include "model/architecture.h"

namespace ls::model {

namespace {
Tensor upload_tensor(vk::Device& device, const TensorInfo& info) {
  Shape shape;
  for (uint64_t d : info.shape) shape.push_back(uint32_t(d));
  Tensor t = Tensor::empty(device, shape, info.dtype, "weight");
  upload_bytes(t, {reinterpret_cast<const uint8_t*>(info.bytes.data()), info.bytes.size()});
  return t;
}
}  // namespace

ModelWeights upload_weights(vk::Device& device, const ModelConfig& c, const SafeTensors& files) {
  check_weights(c, files);
  auto get = [&](const std::string& name) { return upload_tensor(device, files.at(name)); };
  auto linear = [&](const std::string& prefix, bool bias) {
    return LinearWeights{get(prefix + ".weight"), bias ? get(prefix + ".bias") : Tensor()};
  };
  ModelWeights w;
  w.embed = get("model.embed_tokens.weight");
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.input_norm = get(p + "input_layernorm.weight");
    l.post_attention_norm = get(p + "post_attention_layernorm.weight");
    l.q = linear(p + "self_attn.q_proj", c.qkv_bias);
    l.k = linear(p + "self_attn.k_proj", c.qkv_bias);
    l.v = linear(p + "self_attn.v_proj", c.qkv_bias);
    l.o = linear(p + "self_attn.o_proj", c.o_bias);
    l.gate = linear(p + "mlp.gate_proj", c.mlp_bias);
    l.up = linear(p + "mlp.up_proj", c.mlp_bias);
    l.down = linear(p + "mlp.down_proj", c.mlp_bias);
    w.layers.push_back(std::move(l));
  }
  w.final_norm = get("model.norm.weight");
  w.lm_head = c.tie_word_embeddings ? w.embed : get("lm_head.weight");
  auto inv_freq = rope_inv_freq(c);
  w.inv_freq = Tensor::empty(device, {uint32_t(inv_freq.size())}, DType::f32, "rope inv_freq");
  upload(w.inv_freq, inv_freq);
  return w;
}

Model Model::load(vk::Device& device, const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir.string() + ": not a model folder (no such directory)");
  Model m;
  m.dir = dir;
  m.config = load_config(dir / "config.json");
  SafeTensors files = SafeTensors::open(dir);
  m.weights = upload_weights(device, m.config, files);
  return m;
}

}  // namespace ls::model
