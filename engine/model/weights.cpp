#include "model/weights.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "error.h"

namespace ls::model {

namespace {
Tensor upload_tensor(vk::Device& device, const TensorInfo& info, DType dtype) {
  Shape shape;
  for (uint64_t d : info.shape) shape.push_back(uint32_t(d));
  Tensor t = Tensor::empty(device, shape, dtype, "weight");
  if (dtype == info.dtype) {
    upload_bytes(t, {reinterpret_cast<const uint8_t*>(info.bytes.data()), info.bytes.size()});
    return t;
  }
  // bf16 -> f16 (the only conversion asked for): exact for 2^-14 <= |w| <= 65504, as the tensor-core
  // kernels' own conversion while staging was.
  std::vector<uint16_t> halves(info.bytes.size() / 2);
  const auto* raw = reinterpret_cast<const uint8_t*>(info.bytes.data());
  for (size_t i = 0; i < halves.size(); ++i) {
    uint32_t bits = uint32_t(raw[2 * i] | (raw[2 * i + 1] << 8)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    halves[i] = f32_to_f16(std::clamp(f, -65504.0f, 65504.0f));
  }
  upload_bytes(t, {reinterpret_cast<const uint8_t*>(halves.data()), halves.size() * 2});
  return t;
}

// The dtype a weight is kept in on this device. On tensor cores (docs/design.md "Precision") the products'
// bf16 weights become f16 once, here: the tensor-core kernels read f16 operands, and converting each
// weight tile while staging it cost them 10-40% (H100, session 6, bench/RESULTS.md). Norms keep their
// dtype, and so does an untied embedding table (it only feeds a gather); a tied one is the lm_head's
// weight, the largest product of the step, and its gather then reads the same f16 values.
DType stored_dtype(const vk::Device& device, const ExpectedTensor& e, DType file_dtype, bool tied) {
  const bool product = e.role == TensorRole::weight || e.role == TensorRole::bias || e.role == TensorRole::lm_head ||
                       (tied && e.role == TensorRole::embed);
  return device.coopmat() && product && file_dtype == DType::bf16 ? DType::f16 : file_dtype;
}
}  // namespace

const Tensor& weight_of(const ModelWeights& w, const ExpectedTensor& e) {
  auto norm = [&]() -> const Tensor& {
    const LayerWeights& l = w.layers.at(e.layer);
    switch (e.norm) {
      case LayerNorm::input: return l.input_norm;
      case LayerNorm::post_attention: return l.post_attention_norm;
    }
    throw Error("weight_of: " + e.name + ": no such norm");
  };
  auto linear = [&]() -> const LinearWeights& {
    const LayerWeights& l = w.layers.at(e.layer);
    switch (e.target) {
      case LoraTarget::q_proj: return l.q;
      case LoraTarget::k_proj: return l.k;
      case LoraTarget::v_proj: return l.v;
      case LoraTarget::o_proj: return l.o;
      case LoraTarget::gate_proj: return l.gate;
      case LoraTarget::up_proj: return l.up;
      case LoraTarget::down_proj: return l.down;
    }
    throw Error("weight_of: " + e.name + ": no such projection");
  };
  switch (e.role) {
    case TensorRole::embed: return w.embed;
    case TensorRole::final_norm: return w.final_norm;
    case TensorRole::lm_head: return w.lm_head;
    case TensorRole::layer_norm: return norm();
    case TensorRole::weight: return linear().w;
    case TensorRole::bias: return linear().b;
  }
  throw Error("weight_of: " + e.name + ": no such role");
}

Tensor& weight_of(ModelWeights& w, const ExpectedTensor& e) {
  return const_cast<Tensor&>(weight_of(std::as_const(w), e));
}

ModelWeights upload_weights(vk::Device& device, const ModelConfig& c, const SafeTensors& files) {
  check_weights(c, files);
  const ModelSpec spec = model_spec(c);
  ModelWeights w;
  w.layers.resize(spec.layers.size());
  for (const ExpectedTensor& e : expected_tensors(spec)) {
    const TensorInfo& info = files.at(e.name);
    weight_of(w, e) = upload_tensor(device, info, stored_dtype(device, e, info.dtype, spec.tied));
  }
  if (spec.tied) w.lm_head = w.embed;
  w.inv_freq = Tensor::empty(device, {uint32_t(spec.inv_freq.size())}, DType::f32, "rope inv_freq");
  upload(w.inv_freq, spec.inv_freq);
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
