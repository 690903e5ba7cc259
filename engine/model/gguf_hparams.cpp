#include "model/gguf_hparams.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "error.h"
#include "model/gguf_names.h"
#include "util/json_file.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;

// Llama 3 rope: 1, factor, or 1 / ((1 - s) / factor + s) between the two wavelengths.
std::vector<float> llama3_rope_factors(const ModelConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  const double old_ctx = r.original_max_position_embeddings;
  const double low_wavelen = old_ctx / r.low_freq_factor, high_wavelen = old_ctx / r.high_freq_factor;
  std::vector<float> factors;
  for (uint32_t i = 0; i < c.head_dim; i += 2) {
    const float freq = 1.0f / std::pow(c.rope_theta, float(i) / float(c.head_dim));  // torch's f32 steps
    const double wavelen = 2 * M_PI / double(freq);
    if (wavelen < high_wavelen) factors.push_back(1);
    else if (wavelen > low_wavelen) factors.push_back(r.factor);
    else {
      const double s = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      factors.push_back(float(1 / ((1 - s) / r.factor + s)));
    }
  }
  return factors;
}

// The query scale llama.cpp's gemma3 applies (src/models/gemma3.cpp: its "27B", told by 62 layers, takes
// hidden / heads, in integers; every other size head_dim), and the one transformers applies.
float llamacpp_gemma3_query_scale(const ModelConfig& c) {
  const uint32_t d = c.num_layers == 62 ? c.hidden_size / c.num_heads : c.head_dim;
  return 1.0f / std::sqrt(float(d));
}
float gemma3_query_scale(const ModelConfig& c) {
  return 1.0f / std::sqrt(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : float(c.head_dim));
}

std::string family(const ModelConfig& c) { return c.architecture_name.empty() ? c.model_type : c.architecture_name; }

}  // namespace

std::string gguf_folder_name(const fs::path& dir) {
  const fs::path n = dir.lexically_normal();
  return (n.has_filename() ? n.filename() : n.parent_path().filename()).string();
}

void check_gguf_expressible(const ModelConfig& c, const fs::path& config_path) {
  const std::string where = config_path.string() + ": ", arch = gguf_architecture(c.arch);
  const bool qwen = c.arch == Architecture::Qwen2 || c.arch == Architecture::Qwen3;
  const bool llama = c.arch == Architecture::Llama || c.arch == Architecture::Mistral;
  if (qwen && c.rope_scaling.type != RopeScaling::Type::None)
    throw Error(where + "rope scaling on a " + family(c) + " model cannot be written to GGUF (llama.cpp's " + arch +
                " takes no rope scaling we could set)");
  if (qwen && c.sliding_window)
    throw Error(where + family(c) + "'s sliding window (use_sliding_window) has no GGUF key in llama.cpp's " + arch +
                "; export refused rather than a model that attends differently");
  if (!llama && c.rope_scaling.type == RopeScaling::Type::Llama3)
    throw Error(where + "Llama 3 rope scaling on a " + family(c) + " model cannot be written to GGUF (llama.cpp's " +
                arch + " reads no rope_freqs tensor)");
  if (c.arch != Architecture::Phi3 && c.rope_scaling.type == RopeScaling::Type::LongRope)
    throw Error(where + "longrope on a " + family(c) + " model cannot be written to GGUF (llama.cpp's " + arch +
                " reads no rope_factors_long/short tensors)");
}

std::string gguf_model_name(std::string name, const std::vector<std::string>& tokens) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  bool complete = true;
  for (const char* t : {"</s>", "<unk>", "<s>", "<|endoftext|>"})
    complete = complete && std::find(tokens.begin(), tokens.end(), t) != tokens.end();
  if (complete) return name;
  for (const char* needle : {"phi3", "phi-3"})
    for (size_t at = lower.find(needle); at != std::string::npos; at = lower.find(needle, at + 1)) {
      name.replace(at, std::string_view(needle).size(), "phi_3");
      lower.replace(at, std::string_view(needle).size(), "phi_3");
    }
  return name;
}

void set_gguf_hparams(gguf::Writer& w, const ModelConfig& c, const fs::path& model_dir, GgufFileType type,
                      const std::string& name) {
  const std::string arch = gguf_architecture(c.arch);
  const nlohmann::json raw = read_json_file(model_dir / "config.json");
  const bool gemma = c.arch == Architecture::Gemma3, phi3 = c.arch == Architecture::Phi3;
  w.set("general.architecture", arch);
  w.set("general.type", std::string("model"));
  w.set("general.name", name);
  w.set(arch + ".block_count", c.num_layers);
  w.set(arch + ".context_length", c.max_position_embeddings);
  w.set(arch + ".embedding_length", c.hidden_size);
  w.set(arch + ".feed_forward_length", c.intermediate_size);
  w.set(arch + ".attention.head_count", c.num_heads);
  w.set(arch + ".attention.head_count_kv", c.num_kv_heads);
  if (c.rope_scaling.type == RopeScaling::Type::Linear) {
    w.set(arch + ".rope.scaling.type", std::string("linear"));
    w.set(arch + ".rope.scaling.factor", c.rope_scaling.factor);
  }
  if (c.rope_scaling.type == RopeScaling::Type::LongRope) {
    w.set(arch + ".rope.scaling.type", std::string("longrope"));
    w.set(arch + ".rope.scaling.original_context_length", c.rope_scaling.original_max_position_embeddings);
    w.set(arch + ".rope.scaling.attn_factor", c.rope_scaling.attention_factor);
  }
  w.set(arch + ".rope.freq_base", c.rope_theta);
  w.set(arch + ".attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  if (gemma || (raw.contains("head_dim") && raw["head_dim"].is_number_integer())) {
    w.set(arch + ".attention.key_length", c.head_dim);
    w.set(arch + ".attention.value_length", c.head_dim);
  }
  if (phi3) w.set(arch + ".attention.sliding_window", c.sliding_window.value_or(0));
  if (gemma) {
    w.set(arch + ".rope.freq_base_swa", c.rope_local_theta);
    if (c.final_logit_softcapping > 0) w.set(arch + ".final_logit_softcapping", c.final_logit_softcapping);
    const bool any_sliding = std::find(c.sliding_layers.begin(), c.sliding_layers.end(), true) != c.sliding_layers.end();
    if (any_sliding && c.sliding_window) {
      w.set(arch + ".attention.sliding_window", *c.sliding_window);
      w.set(arch + ".attention.sliding_window_pattern",
            std::vector<uint32_t>(c.sliding_layers.begin(), c.sliding_layers.end()));
    }
  }
  w.set("general.file_type", gguf_llama_ftype(type));
  // convert_hf_to_gguf's Qwen2Model (and Qwen3Model, derived from it) writes neither.
  if (c.arch != Architecture::Qwen2 && c.arch != Architecture::Qwen3) {
    w.set(arch + ".vocab_size", c.vocab_size);
    w.set(arch + ".rope.dimension_count", c.head_dim);
  }
  w.set("general.quantization_version", uint32_t(2));
}

GgufValueMap gguf_value_map(const ModelConfig& c, std::string_view hf_name) {
  if (c.arch != Architecture::Gemma3 || !hf_name.ends_with("norm.weight")) return {};
  GgufValueMap m{.add = 1};
  if (hf_name.ends_with("self_attn.q_norm.weight")) m.mul = gemma3_query_scale(c) / llamacpp_gemma3_query_scale(c);
  return m;
}

std::vector<GgufExtraTensor> gguf_extra_tensors(const ModelConfig& c) {
  std::vector<GgufExtraTensor> out;
  if (c.rope_scaling.type == RopeScaling::Type::Llama3) out.push_back({"rope_freqs.weight", llama3_rope_factors(c)});
  if (c.rope_scaling.type == RopeScaling::Type::LongRope) {
    out.push_back({"rope_factors_long.weight", c.rope_scaling.long_factor});
    out.push_back({"rope_factors_short.weight", c.rope_scaling.short_factor});
  }
  return out;
}

}  // namespace ls::model
