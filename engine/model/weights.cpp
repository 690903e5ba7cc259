#include "model/weights.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "error.h"
#include "model/layer.h"
#include "tensor/dtype.h"
#include "util/parallel.h"

namespace ls::model {

namespace {
Shape shape_of(const TensorInfo& info) {
  Shape shape;
  for (uint64_t d : info.shape) shape.push_back(uint32_t(d));
  return shape;
}

constexpr uint64_t kValuesPerThread = uint64_t(1) << 18;  // the least a conversion thread takes

void require_float(const TensorInfo& info) {
  if (info.dtype == DType::i32) throw Error(info.file.string() + ": tensor \"" + info.name + "\" is not a float tensor");
}

// The tensor's values from the file's, converted to its dtype where they differ.
void fill_tensor(const Tensor& t, const TensorInfo& info) {
  const DType dtype = t.dtype();
  if (dtype == info.dtype) {
    upload_bytes(t, {reinterpret_cast<const uint8_t*>(info.bytes.data()), info.bytes.size()});
    return;
  }
  // bf16 -> f16 (tensor cores) or a quantized layer's bias -> its products' dtype. Into f16 values are
  // clamped to its range: exact for 2^-14 <= |w| <= 65504, as the tensor-core kernels' own conversion
  // while staging was. On all cores: the 7B shape's 7.6 billion values took ~55 s on one (H100 host, s16b).
  require_float(info);
  std::vector<std::byte> bytes(t.bytes());
  parallel_for(info.numel(), [&](uint64_t first, uint64_t end) {
    for (uint64_t i = first; i < end; ++i) {
      float f = load_as_f32(info.bytes.data(), info.dtype, i);
      if (dtype == DType::f16) f = std::clamp(f, -65504.0f, 65504.0f);
      store_from_f32(bytes.data(), dtype, i, f);
    }
  }, kValuesPerThread);
  upload_bytes(t, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

Tensor upload_tensor(vk::Device& device, const TensorInfo& info, DType dtype, bool host = false) {
  Tensor t = host ? Tensor::empty_host(device, shape_of(info), dtype, "embedding table (system memory)")
                  : Tensor::empty(device, shape_of(info), dtype, "weight");
  fill_tensor(t, info);
  return t;
}

// A weight's values in f32, converted on all cores (the input of quantize).
std::vector<float> values_f32(const TensorInfo& info) {
  require_float(info);
  std::vector<float> v(info.numel());
  parallel_for(v.size(), [&](uint64_t first, uint64_t end) {
    for (uint64_t i = first; i < end; ++i) v[i] = load_as_f32(info.bytes.data(), info.dtype, i);
  }, kValuesPerThread);
  return v;
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
// Rows [begin, end) of a weight [out, in] or bias [out], as a tensor of its own (a fused projection's part).
TensorInfo rows_of(const TensorInfo& info, uint64_t begin, uint64_t end);

// LayerWeights::qkv: where the device has VK_NV_cooperative_matrix2, the backward takes the fused product
// (model::qkv_backward_fuses) and the weights are not quantized, each layer
// whose q, k and v weights (its own or the parts of a fused qkv_proj) are all f16 as stored and equally wide gets
// one [Nq + Nk + Nv, C] allocation, and their w become views of its rows, which the upload then fills.
// LORASTUDIO_QKV_PLACE=1 does so on any device, for weights of any one dtype (tests: the fused backward on lavapipe).
void place_qkv(vk::Device& device, const ModelSpec& spec, const std::vector<ExpectedTensor>& expected,
               const SafeTensors& files, QuantType quant, ModelWeights& w) {
  const char* forced_env = std::getenv("LORASTUDIO_QKV_PLACE");
  const bool forced = forced_env && std::string_view(forced_env) == "1";
  if (!((device.coopmat2() && qkv_backward_fuses()) || forced) || quant != QuantType::none) return;
  struct Rows {
    uint32_t q = 0, k = 0, v = 0, cols = 0;
    DType dtype = DType::f16;
    bool fits = true;
  };
  std::vector<Rows> rows(w.layers.size());
  for (const ExpectedTensor& e : expected) {
    if (e.role != TensorRole::weight) continue;
    const ModuleSpec& m = spec.layers.at(e.layer).projection(e.target);
    Rows& r = rows[e.layer];
    auto note = [&](LoraTarget t, uint32_t n) {
      if (t == LoraTarget::q_proj) r.q = n;
      else if (t == LoraTarget::k_proj) r.k = n;
      else if (t == LoraTarget::v_proj) r.v = n;
      else return;
      const DType stored = stored_dtype(device, e, files.at(e.name).dtype, spec.tied);
      if ((forced ? r.cols && stored != r.dtype : stored != DType::f16) || (r.cols && r.cols != uint32_t(e.shape[1])))
        r.fits = false;
      r.cols = uint32_t(e.shape[1]);
      r.dtype = stored;
    };
    if (m.parts.empty()) note(e.target, uint32_t(e.shape[0]));
    for (const FusedPart& part : m.parts) note(part.target, part.rows);
  }
  const uint64_t align = std::max<uint64_t>(device.report().storage_alignment, 1);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Rows& r = rows[i];
    if (!r.fits || !r.q || !r.k || !r.v) continue;
    const uint64_t row_bytes = uint64_t(r.cols) * dtype_size(r.dtype);  // k's and v's views must bind where they start
    if ((r.q * row_bytes) % align || ((r.q + r.k) * row_bytes) % align) continue;
    LayerWeights& l = w.layers[i];
    l.qkv = Tensor::empty(device, {r.q + r.k + r.v, r.cols}, r.dtype, "q, k and v weights");
    l.q.w = l.qkv.slice_rows(0, r.q);
    l.k.w = l.qkv.slice_rows(r.q, r.q + r.k);
    l.v.w = l.qkv.slice_rows(r.q + r.k, r.q + r.k + r.v);
  }
}

TensorInfo rows_of(const TensorInfo& info, uint64_t begin, uint64_t end) {
  TensorInfo part = info;
  const uint64_t row_bytes = info.bytes.size() / info.shape.at(0);
  part.shape[0] = end - begin;
  part.bytes = info.bytes.subspan(begin * row_bytes, (end - begin) * row_bytes);
  return part;
}
}  // namespace

bool embedding_in_host_memory(bool host_apart, bool tied) {
  auto flag = [](const char* name) {  // read at each load, so that a test can set them
    const char* v = std::getenv(name);
    return v && std::string_view(v) == "1";
  };
  return !tied && !flag("LORASTUDIO_EMBED_ON_GPU") && (host_apart || flag("LORASTUDIO_EMBED_IN_HOST"));
}

const LinearWeights& linear_of(const ModelWeights& w, const ExpectedTensor& e) {
  const LayerWeights& l = w.layers.at(e.layer);
  switch (e.target) {
    case LoraTarget::q_proj: return l.q;
    case LoraTarget::k_proj: return l.k;
    case LoraTarget::v_proj: return l.v;
    case LoraTarget::o_proj: return l.o;
    case LoraTarget::gate_proj: return l.gate;
    case LoraTarget::up_proj: return l.up;
    case LoraTarget::down_proj: return l.down;
    // A fused projection is split into its parts when loaded (upload_weights): its row reads its first
    // part, which has the dtype and quantization of the whole (memory plans ask for those).
    case LoraTarget::qkv_proj: return l.q;
    case LoraTarget::gate_up_proj: return l.gate;
  }
  throw Error("linear_of: " + e.name + ": no such projection");
}

const Tensor& weight_of(const ModelWeights& w, const ExpectedTensor& e) {
  auto norm = [&]() -> const Tensor& {
    const LayerWeights& l = w.layers.at(e.layer);
    switch (e.norm) {
      case LayerNorm::input: return l.input_norm;
      case LayerNorm::post_attention: return l.post_attention_norm;
      case LayerNorm::q: return l.q_norm;
      case LayerNorm::k: return l.k_norm;
      case LayerNorm::attention_out: return l.attention_out_norm;
      case LayerNorm::mlp_out: return l.mlp_out_norm;
    }
    throw Error("weight_of: " + e.name + ": no such norm");
  };
  switch (e.role) {
    case TensorRole::embed: return w.embed;
    case TensorRole::final_norm: return w.final_norm;
    case TensorRole::lm_head: return w.lm_head;
    case TensorRole::layer_norm: return norm();
    case TensorRole::weight: return linear_of(w, e).w;
    case TensorRole::bias: return linear_of(w, e).b;
  }
  throw Error("weight_of: " + e.name + ": no such role");
}

LinearWeights& linear_of(ModelWeights& w, const ExpectedTensor& e) {
  return const_cast<LinearWeights&>(linear_of(std::as_const(w), e));
}

Tensor& weight_of(ModelWeights& w, const ExpectedTensor& e) {
  return const_cast<Tensor&>(weight_of(std::as_const(w), e));
}

ModelWeights upload_weights(vk::Device& device, const ModelConfig& c, const SafeTensors& files, QuantType quant) {
  check_weights(c, files);
  const ModelSpec spec = model_spec(c);
  ModelWeights w;
  w.layers.resize(spec.layers.size());
  w.quant = quant;
  if (quant == QuantType::nf4) w.quant_map = ops::upload_dynamic_map(device);
  const unsigned threads = host_threads();
  const bool host_embed = embedding_in_host_memory(device.memory().host_apart(), spec.tied);
  w.embed_in_host = host_embed;
  // One row of the table, or one part of a fused projection's.
  auto upload_one = [&](const ExpectedTensor& e, const TensorInfo& info) {
    if (quant != QuantType::none && e.role == TensorRole::weight) {
      const std::vector<float> values = values_f32(info);
      linear_of(w, e).q = ops::upload_quantized(device, quantize(quant, values, threads), uint32_t(e.shape[0]),
                                                uint32_t(e.shape[1]), w.quant_map);
      return;
    }
    const bool norm = e.role == TensorRole::layer_norm || e.role == TensorRole::final_norm;
    if (norm && spec.final_norm.style == NormStyle::one_plus_weight) {  // Gemma3RMSNorm's (1.0 + w.float())
      std::vector<float> v = info.values_f32();
      for (float& x : v) x = 1.0f + x;
      weight_of(w, e) = Tensor::empty(device, shape_of(info), DType::f32, "norm weight (1 + w)");
      upload(weight_of(w, e), v);
      return;
    }
    const DType dtype = quant != QuantType::none && e.role == TensorRole::bias
                            ? ops::dequantized_dtype(device)
                            : stored_dtype(device, e, info.dtype, spec.tied);
    Tensor& t = weight_of(w, e);
    if (t.defined() && t.dtype() == dtype && t.shape() == shape_of(info)) return fill_tensor(t, info);  // place_qkv's
    t = upload_tensor(device, info, dtype, host_embed && e.role == TensorRole::embed);
  };
  const std::vector<ExpectedTensor> expected = expected_tensors(spec, c.weight_prefix, c.lm_head_name);
  place_qkv(device, spec, expected, files, quant, w);
  for (const ExpectedTensor& e : expected) {
    const TensorInfo& info = files.at(e.name);
    if (e.role == TensorRole::weight || e.role == TensorRole::bias) {
      const ModuleSpec& m = spec.layers.at(e.layer).projection(e.target);
      uint64_t row = 0;
      for (const FusedPart& p : m.parts) {  // a fused projection: each part's rows into the part's weights
        ExpectedTensor part = e;
        part.target = p.target;
        part.shape[0] = p.rows;
        upload_one(part, rows_of(info, row, row + p.rows));
        row += p.rows;
      }
      if (!m.parts.empty()) continue;
    }
    upload_one(e, info);
  }
  if (spec.tied) w.lm_head = w.embed;
  w.inv_freq = Tensor::empty(device, {uint32_t(spec.inv_freq.size())}, DType::f32, "rope inv_freq");
  upload(w.inv_freq, spec.inv_freq);
  if (!spec.inv_freq_long.empty()) {
    w.inv_freq_long = Tensor::empty(device, {uint32_t(spec.inv_freq_long.size())}, DType::f32, "rope inv_freq long");
    upload(w.inv_freq_long, spec.inv_freq_long);
  }
  if (!spec.inv_freq_local.empty()) {
    w.inv_freq_local = Tensor::empty(device, {uint32_t(spec.inv_freq_local.size())}, DType::f32, "rope inv_freq local");
    upload(w.inv_freq_local, spec.inv_freq_local);
  }
  return w;
}

uint64_t ModelWeights::device_bytes() const {
  auto bytes = [](const Tensor& t) { return t.defined() ? t.bytes() : 0; };
  auto linear = [&](const LinearWeights& l) { return bytes(l.w) + bytes(l.b) + l.q.bytes(); };
  uint64_t total =
      (embed_in_host ? 0 : bytes(embed)) + bytes(final_norm) + bytes(inv_freq) + bytes(inv_freq_long) + bytes(inv_freq_local) + bytes(quant_map);
  if (lm_head.defined() && lm_head.range().alloc != embed.range().alloc) total += bytes(lm_head);
  for (const LayerWeights& l : layers)
    total += bytes(l.input_norm) + bytes(l.post_attention_norm) + bytes(l.q_norm) + bytes(l.k_norm) +
             bytes(l.attention_out_norm) + bytes(l.mlp_out_norm) + linear(l.q) +
             linear(l.k) + linear(l.v) + linear(l.o) + linear(l.gate) + linear(l.up) + linear(l.down);
  return total;
}

Model Model::load(vk::Device& device, const std::filesystem::path& dir, QuantType quant) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir.string() + ": not a model folder (no such directory)");
  Model m;
  m.dir = dir;
  m.config = load_config(dir / "config.json");
  SafeTensors files = SafeTensors::open(dir);
  resolve_weight_names(m.config, [&](const std::string& name) { return files.find(name) != nullptr; });
  m.weights = upload_weights(device, m.config, files, quant);
  return m;
}

}  // namespace ls::model
