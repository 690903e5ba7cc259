#pragma once
// A CPU forward of a whole model in double, written out from transformers' modeling code (Qwen2, Qwen3,
// Llama, Mistral, Phi-3) and not from ours: the weights come from the files by their Hugging Face names,
// the RoPE inverse frequencies and the attention window from the layer description (model/layer_spec.h,
// checked against the configs in layer_spec_test), the rest from the config. For families without golden
// fixtures: the recorded layer (model/layer.h) must give these logits.
//   x = embed[ids]; per layer: h = rms(x)·w_in; q, k, v = h·Wᵀ + b (Phi-3: qkv = h·Wqkvᵀ split by columns);
//   (Qwen3: q, k = rms(q)·w_q, rms(k)·w_k per head); q, k = RoPE (rotate_half: pairs (j, j + D/2); longrope:
//   cos and sin times the attention factor); causal GQA softmax(q·kᵀ/√D) v, within the layer's window (key
//   j seen by query i when i - j < window); x += attn·Woᵀ + bo; h = rms(x)·w_post; x += (silu(h·Wgᵀ) ⊙
//   h·Wuᵀ)·Wdᵀ (Phi-3: gate, up = the two halves of h·Wgate_upᵀ). logits = rms(x)·w_final · lm_headᵀ (the
//   embedding when tied).
// longrope's factors: one forward over T tokens uses the long ones when T > original_max_position_embeddings
// (transformers), for every position.
// Gemma 3 (Gemma3ForCausalLM): x = embed[ids]·√C (ModelSpec::embedding_scale, rounded as transformers rounds it);
// every rms(x)·w is rms(x)·(1 + w); scores scaled by query_pre_attn_scalar^-0.5; sliding layers (layer_types)
// use the window and their own RoPE table (rope_local_base_freq); x += rms(attn·Woᵀ)·(1 + w_post_attention);
// h2 = rms(x)·(1 + w_pre_feedforward); x += rms((gelu_tanh(h2·Wgᵀ) ⊙ h2·Wuᵀ)·Wdᵀ)·(1 + w_post_feedforward);
// logits = c·tanh(logits / c) with c = final_logit_softcapping.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/layer_spec.h"
#include "model/safetensors.h"
#include "tensor/tensor.h"

namespace ls::test {

class ReferenceModel {
 public:
  ReferenceModel(const model::ModelConfig& c, const model::SafeTensors& st)
      : config_(c), spec_(model::model_spec(c)), st_(st) {}

  // [T, V] logits of every position of `ids` (positions 0..T-1), as one forward over all of them.
  std::vector<float> logits(std::span<const int32_t> ids) const {
    const size_t T = ids.size(), C = spec_.hidden, V = spec_.vocab;
    long_ = model::rope_uses_long_factors(config_, T);
    const std::vector<double> embed = values("model.embed_tokens.weight");
    std::vector<double> x(T * C);
    for (size_t t = 0; t < T; ++t)
      for (size_t i = 0; i < C; ++i) x[t * C + i] = embed[size_t(ids[t]) * C + i] * spec_.embedding_scale;
    for (size_t l = 0; l < spec_.layers.size(); ++l) layer(l, x, T);
    const std::vector<double> h = rms(x, norm_weight("model.norm.weight"), spec_.final_norm.eps);
    const std::vector<double> head = spec_.tied ? embed : values("lm_head.weight");
    std::vector<float> out(T * V);
    for (size_t t = 0; t < T; ++t)
      for (size_t v = 0; v < V; ++v) {
        double s = 0;
        for (size_t i = 0; i < C; ++i) s += h[t * C + i] * head[v * C + i];
        const double cap = config_.final_logit_softcapping;
        out[t * V + v] = float(cap > 0 ? cap * std::tanh(s / cap) : s);
      }
    return out;
  }

 private:
  std::vector<double> values(const std::string& name) const {
    const model::TensorInfo& info = st_.at(name);
    std::vector<double> v(info.bytes.size() / dtype_size(info.dtype));
    for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(info.bytes.data(), info.dtype, i);
    return v;
  }
  bool has(const std::string& name) const { return st_.find(name) != nullptr; }
  bool gemma() const { return config_.arch == model::Architecture::Gemma3; }
  // A norm's weight as it multiplies: w, or Gemma's 1 + w.
  std::vector<double> norm_weight(const std::string& name) const {
    std::vector<double> w = values(name);
    if (gemma())
      for (double& v : w) v += 1.0;
    return w;
  }

  // Rows of width w.size(): x / sqrt(mean(x²) + eps) · w.
  static std::vector<double> rms(const std::vector<double>& x, const std::vector<double>& w, double eps) {
    const size_t n = w.size();
    std::vector<double> y(x.size());
    for (size_t r = 0; r < x.size() / n; ++r) {
      double ss = 0;
      for (size_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
      const double rstd = 1.0 / std::sqrt(ss / double(n) + eps);
      for (size_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * rstd * w[i];
    }
    return y;
  }

  // y [T, out] = x [T, in] · Wᵀ (+ b), for the module `prefix` (".weight", ".bias").
  std::vector<double> linear(const std::string& prefix, const std::vector<double>& x, size_t T) const {
    const std::vector<double> w = values(prefix + ".weight");
    const std::vector<double> b = has(prefix + ".bias") ? values(prefix + ".bias") : std::vector<double>{};
    const size_t in = x.size() / T, out = w.size() / in;
    std::vector<double> y(T * out);
    for (size_t t = 0; t < T; ++t)
      for (size_t o = 0; o < out; ++o) {
        double s = b.empty() ? 0.0 : b[o];
        for (size_t i = 0; i < in; ++i) s += x[t * in + i] * w[o * in + i];
        y[t * out + o] = s;
      }
    return y;
  }

  // rotate_half RoPE on [T, heads, D] at positions 0..T-1.
  void rope(std::vector<double>& q, size_t T, size_t heads, size_t D, bool local) const {
    for (size_t t = 0; t < T; ++t)
      for (size_t h = 0; h < heads; ++h)
        for (size_t j = 0; j < D / 2; ++j) {
          const std::vector<float>& inv_freq = local ? spec_.inv_freq_local : long_ ? spec_.inv_freq_long : spec_.inv_freq;
          const double af = config_.rope_scaling.attention_factor;
          const double a = double(t) * double(inv_freq[j]), c = std::cos(a) * af, s = std::sin(a) * af;
          double& x1 = q[(t * heads + h) * D + j];
          double& x2 = q[(t * heads + h) * D + j + D / 2];
          const double r1 = x1 * c - x2 * s, r2 = x2 * c + x1 * s;
          x1 = r1;
          x2 = r2;
        }
  }

  void layer(size_t l, std::vector<double>& x, size_t T) const {
    const model::LayerSpec& s = spec_.layers[l];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const size_t C = s.hidden, H = s.heads, KV = s.kv_heads, D = s.head_dim;
    const double eps = s.norm.eps;
    const std::vector<double> h1 = rms(x, norm_weight(p + "input_layernorm.weight"), eps);
    std::vector<double> q, k, v;
    if (has(p + "self_attn.qkv_proj.weight")) {  // Phi-3: [q; k; v] by rows, so by columns of the output
      const std::vector<double> qkv = linear(p + "self_attn.qkv_proj", h1, T);
      const size_t n = (H + 2 * KV) * D;
      for (size_t t = 0; t < T; ++t) {
        const double* row = qkv.data() + t * n;
        q.insert(q.end(), row, row + H * D);
        k.insert(k.end(), row + H * D, row + (H + KV) * D);
        v.insert(v.end(), row + (H + KV) * D, row + n);
      }
    } else {
      q = linear(p + "self_attn.q_proj", h1, T), k = linear(p + "self_attn.k_proj", h1, T),
      v = linear(p + "self_attn.v_proj", h1, T);
    }
    if (s.qk_norm) {
      q = rms(q, norm_weight(p + "self_attn.q_norm.weight"), eps);
      k = rms(k, norm_weight(p + "self_attn.k_norm.weight"), eps);
    }
    const bool local = gemma() && config_.sliding_layers.at(l);  // Gemma 3's sliding layers' RoPE
    rope(q, T, H, D, local);
    rope(k, T, KV, D, local);
    const double scale = gemma() ? std::pow(double(config_.query_pre_attn_scalar), -0.5) : 1 / std::sqrt(double(D));
    std::vector<double> attn(T * H * D, 0.0);
    for (size_t h = 0; h < H; ++h) {
      const size_t g = h / (H / KV);
      for (size_t i = 0; i < T; ++i) {
        std::vector<double> score(i + 1, -INFINITY);
        double mx = -INFINITY;
        for (size_t j = 0; j <= i; ++j) {
          if (s.window && i - j >= *s.window) continue;
          double d = 0;
          for (size_t e = 0; e < D; ++e) d += q[(i * H + h) * D + e] * k[(j * KV + g) * D + e];
          score[j] = d * scale;
          mx = std::max(mx, score[j]);
        }
        double z = 0;
        for (double& sc : score) z += sc = std::exp(sc - mx);
        for (size_t j = 0; j <= i; ++j)
          for (size_t e = 0; e < D; ++e) attn[(i * H + h) * D + e] += score[j] / z * v[(j * KV + g) * D + e];
      }
    }
    std::vector<double> o = linear(p + "self_attn.o_proj", attn, T);
    if (gemma()) o = rms(o, norm_weight(p + "post_attention_layernorm.weight"), eps);
    for (size_t i = 0; i < T * C; ++i) x[i] += o[i];
    const std::vector<double> h2 =
        rms(x, norm_weight(p + (gemma() ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight")), eps);
    std::vector<double> gate, up;
    if (has(p + "mlp.gate_up_proj.weight")) {  // Phi-3: gate, up = gate_up.chunk(2, dim=-1)
      const std::vector<double> gu = linear(p + "mlp.gate_up_proj", h2, T);
      const size_t I = s.intermediate;
      for (size_t t = 0; t < T; ++t) {
        gate.insert(gate.end(), gu.begin() + ptrdiff_t(t * 2 * I), gu.begin() + ptrdiff_t(t * 2 * I + I));
        up.insert(up.end(), gu.begin() + ptrdiff_t(t * 2 * I + I), gu.begin() + ptrdiff_t((t + 1) * 2 * I));
      }
    } else {
      gate = linear(p + "mlp.gate_proj", h2, T);
      up = linear(p + "mlp.up_proj", h2, T);
    }
    for (size_t i = 0; i < gate.size(); ++i) {
      const double g = gate[i];  // SiLU, or Gemma's gelu_pytorch_tanh
      gate[i] = (gemma() ? 0.5 * g * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (g + 0.044715 * g * g * g)))
                         : g / (1.0 + std::exp(-g))) * up[i];
    }
    std::vector<double> down = linear(p + "mlp.down_proj", gate, T);
    if (gemma()) down = rms(down, norm_weight(p + "post_feedforward_layernorm.weight"), eps);
    for (size_t i = 0; i < T * C; ++i) x[i] += down[i];
  }

  model::ModelConfig config_;
  model::ModelSpec spec_;
  const model::SafeTensors& st_;
  mutable bool long_ = false;  // longrope: this forward uses the long factors
};

}  // namespace ls::test
