#include "model/config.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>

#include "error.h"
#include "ops/rope.h"
#include "util/json_keys.h"
#include "util/mapped_file.h"

namespace ls::model {
namespace {

using nlohmann::json;

struct ArchInfo {
  Architecture arch;
  const char* name;        // "architectures"[0]
  const char* model_type;  // "model_type"
};
constexpr ArchInfo kArchitectures[] = {
    {Architecture::Qwen2, "Qwen2ForCausalLM", "qwen2"},
    {Architecture::Qwen3, "Qwen3ForCausalLM", "qwen3"},
    {Architecture::Phi3, "Phi3ForCausalLM", "phi3"},
    {Architecture::Gemma3, "Gemma3ForCausalLM", "gemma3_text"},
    {Architecture::Llama, "LlamaForCausalLM", "llama"},
    {Architecture::Mistral, "MistralForCausalLM", "mistral"},
};

// Typed, checked access to one JSON object's keys (util/json_keys.h).
using Keys = JsonKeys;

const ArchInfo& architecture_of(const Keys& k, const std::string& where) {
  std::string name;
  if (const json* a = k.get("architectures")) {
    if (!a->is_array() || a->empty() || !(*a)[0].is_string())
      k.fail("architectures", "must be a list of names, got " + a->dump());
    name = (*a)[0].get<std::string>();
    for (const ArchInfo& info : kArchitectures)
      if (name == info.name) return info;
  } else if (k.has("model_type")) {
    name = k.string("model_type");
    for (const ArchInfo& info : kArchitectures)
      if (name == info.model_type) return info;
  } else {
    throw Error(where + ": missing required key \"architectures\" (or \"model_type\")");
  }
  throw Error(where + ": architecture \"" + name + "\" is not supported (supported: " + supported_architectures() +
              ")");
}

// A longrope factor list: `n` positive numbers.
std::vector<float> factor_list(const Keys& k, const std::string& name, uint32_t n) {
  const json* v = k.get(name);
  if (!v) k.fail(name, "is missing (longrope needs short_factor and long_factor)");
  if (!v->is_array()) k.fail(name, "must be a list of numbers, got " + v->dump());
  if (v->size() != n)
    k.fail(name, "has " + std::to_string(v->size()) + " values; head_dim / 2 = " + std::to_string(n) + " expected");
  std::vector<float> out;
  for (const json& x : *v) {
    if (!x.is_number() || !(x.get<double>() > 0) || !std::isfinite(x.get<double>()))
      k.fail(name, "must hold positive numbers, got " + x.dump());
    out.push_back(float(x.get<double>()));
  }
  return out;
}

// rope_scaling {"rope_type" (or legacy "type"): "linear" | "llama3" | "longrope" | "su" | "default", "factor", ...}.
// longrope's factor lists are checked against head_dim later (parse_config), as its
// original_max_position_embeddings may sit at the config's top level (Phi-3).
RopeScaling rope_scaling_of(const json& s, const std::string& key, const std::string& where, bool type_optional) {
  Keys k(s, where + ": \"" + key + "\"");
  if (!s.is_object()) throw Error(where + ": \"" + key + "\" must be an object, got " + s.dump());
  std::string type = k.has("rope_type") ? k.string("rope_type") : k.string("type");
  if (type.empty() && !type_optional) throw Error(where + ": \"" + key + "\" has no \"rope_type\"");
  RopeScaling r;
  if (type.empty() || type == "default") return r;
  if (type == "linear") {
    if (!k.has("factor")) throw Error(where + ": \"" + key + "\" (linear) has no \"factor\"");
    r.type = RopeScaling::Type::Linear;
    r.factor = k.positive_float("factor", 1);
    return r;
  }
  if (type == "llama3") {
    for (const char* needed : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
      if (!k.has(needed)) throw Error(where + ": \"" + key + "\" (llama3) has no \"" + needed + "\"");
    r.type = RopeScaling::Type::Llama3;
    r.factor = k.positive_float("factor", 1);
    r.low_freq_factor = k.positive_float("low_freq_factor", 1);
    r.high_freq_factor = k.positive_float("high_freq_factor", 4);
    r.original_max_position_embeddings = k.positive_u32("original_max_position_embeddings");
    if (!(r.low_freq_factor < r.high_freq_factor))
      throw Error(where + ": \"" + key + "\" (llama3): low_freq_factor " + std::to_string(r.low_freq_factor) +
                  " must be below high_freq_factor " + std::to_string(r.high_freq_factor));
    return r;
  }
  if (type == "longrope" || type == "su") {
    r.type = RopeScaling::Type::LongRope;
    return r;  // the rest in longrope_of, which knows head_dim and the top-level keys
  }
  throw Error(where + ": \"" + key + "\" type \"" + type +
              "\" is not supported (supported: default, linear, llama3, longrope)");
}

// longrope (transformers' _compute_longrope_parameters): short_factor and long_factor of D/2 values each;
// original_max_position_embeddings inside the object (transformers 5) or at the config's top level (Phi-3);
// the attention factor as given, else from factor = max_position_embeddings / original (transformers' rule
// for a config with a top-level original_max_position_embeddings, as Phi-3's; with it only inside the object,
// transformers 5 takes the object's "factor" when given): sqrt(1 + ln(factor) / ln(original)) when factor > 1,
// else 1.
void longrope_of(RopeScaling& r, const json& s, const std::string& key, const Keys& top, const std::string& where,
                 uint32_t head_dim, uint32_t max_position_embeddings) {
  const Keys k(s, where + ": \"" + key + "\" (longrope)");
  // transformers 5 writes partial_rotary_factor into the rope object too (Phi-4-mini: 0.75).
  if (const json* prf = k.get("partial_rotary_factor"); prf && !(prf->is_number() && prf->get<double>() == 1.0))
    k.fail("partial_rotary_factor", "is " + prf->dump() + "; only 1 (RoPE over the whole head) is supported");
  r.short_factor = factor_list(k, "short_factor", head_dim / 2);
  r.long_factor = factor_list(k, "long_factor", head_dim / 2);
  const bool inside = k.has("original_max_position_embeddings");
  if (!inside && !top.has("original_max_position_embeddings"))
    throw Error(where + ": longrope needs \"original_max_position_embeddings\" (in \"" + key +
                "\" or at the top level)");
  r.original_max_position_embeddings = inside ? k.positive_u32("original_max_position_embeddings")
                                              : top.positive_u32("original_max_position_embeddings");
  const double original = r.original_max_position_embeddings;
  const double factor = !top.has("original_max_position_embeddings") && k.has("factor")
                            ? k.positive_float("factor", 1)
                            : max_position_embeddings / original;
  r.factor = float(factor);
  if (k.has("attention_factor"))
    r.attention_factor = k.positive_float("attention_factor", 1);
  else
    r.attention_factor = factor <= 1 ? 1.0f : float(std::sqrt(1 + std::log(factor) / std::log(original)));
}

// Gemma 3's RoPE: the full layers' (rope_theta, rope_scaling) and the sliding layers' base. transformers 5
// writes {"rope_parameters": {"full_attention": {...}, "sliding_attention": {...}}}; older configs rope_theta,
// rope_scaling (the full layers') and rope_local_base_freq. The sliding layers' RoPE must be the default one.
void gemma3_rope(ModelConfig& c, const Keys& k, const std::string& where) {
  c.rope_theta = k.positive_float("rope_theta", 1e6);
  c.rope_local_theta = k.positive_float("rope_local_base_freq", 10000);
  const json* p = k.get("rope_parameters");
  if (p && p->is_object() && (p->contains("full_attention") || p->contains("sliding_attention"))) {
    if (const json* full = Keys(*p, where).get("full_attention")) {
      const std::string key = "rope_parameters.full_attention";
      c.rope_theta = Keys(*full, where + ": \"" + key + "\"").positive_float("rope_theta", c.rope_theta);
      c.rope_scaling = rope_scaling_of(*full, key, where, true);
    }
    if (const json* local = Keys(*p, where).get("sliding_attention")) {
      const std::string key = "rope_parameters.sliding_attention";
      c.rope_local_theta = Keys(*local, where + ": \"" + key + "\"").positive_float("rope_theta", c.rope_local_theta);
      if (rope_scaling_of(*local, key, where, true).type != RopeScaling::Type::None)
        throw Error(where + ": \"" + key + "\" is scaled; Gemma 3's sliding layers take the default RoPE only");
    }
  } else if (p && p->is_object()) {  // one RoPE for the full layers
    c.rope_theta = Keys(*p, where + ": \"rope_parameters\"").positive_float("rope_theta", c.rope_theta);
    c.rope_scaling = rope_scaling_of(*p, "rope_parameters", where, true);
  } else {
    if (p) k.fail("rope_parameters", "must be an object, got " + p->dump());
    if (const json* s = k.get("rope_scaling")) c.rope_scaling = rope_scaling_of(*s, "rope_scaling", where, false);
  }
  if (c.rope_scaling.type == RopeScaling::Type::LongRope)
    throw Error(where + ": longrope is not supported for Gemma 3");
}

// Gemma 3's sliding layers: "layer_types", else every layer but each sliding_window_pattern-th (transformers'
// Gemma3TextConfig: layer i slides when (i + 1) % pattern != 0).
std::vector<bool> gemma3_sliding_layers(const ModelConfig& c, const Keys& k) {
  std::vector<bool> sliding(c.num_layers);
  if (const json* types = k.get("layer_types")) {
    if (!types->is_array() || types->size() != c.num_layers)
      k.fail("layer_types", "must list num_hidden_layers (" + std::to_string(c.num_layers) + ") layer types, got " +
                                types->dump());
    for (size_t i = 0; i < types->size(); ++i) {
      const json& t = (*types)[i];
      if (t != "sliding_attention" && t != "full_attention")
        k.fail("layer_types", "holds " + t.dump() + "; only \"sliding_attention\" and \"full_attention\" are known");
      sliding[i] = t == "sliding_attention";
    }
    return sliding;
  }
  const uint32_t pattern = k.has("sliding_window_pattern") ? k.positive_u32("sliding_window_pattern")
                                                            : k.positive_u32("_sliding_window_pattern", 6);
  for (uint32_t i = 0; i < c.num_layers; ++i) sliding[i] = (i + 1) % pattern != 0;
  return sliding;
}

// A Gemma3ForConditionalGeneration config: its "text_config" with what the top level says for the whole model
// (token ids, dtype, tying) where the text config does not say it.
json gemma3_text_config(const json& j, const std::string& where) {
  const auto it = j.find("text_config");
  if (it == j.end() || !it->is_object())
    throw Error(where + ": Gemma3ForConditionalGeneration needs a \"text_config\" object");
  json t = *it;
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype", "tie_word_embeddings",
                          "quantization_config"})
    if (!t.contains(key) && j.contains(key)) t[key] = j[key];
  t["architectures"] = json::array({"Gemma3ForCausalLM"});
  t["model_type"] = "gemma3_text";
  return t;
}

}  // namespace

const char* supported_architectures() {
  return "Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration, "
         "LlamaForCausalLM, MistralForCausalLM";
}

ModelConfig parse_config(const json& j, const std::filesystem::path& source_for_errors) {
  const std::string where = source_for_errors.string();
  if (!j.is_object()) throw Error(where + ": not a JSON object");
  {
    const json* a = j.contains("architectures") ? &j["architectures"] : nullptr;
    const bool multimodal = a && a->is_array() && !a->empty() ? (*a)[0] == "Gemma3ForConditionalGeneration"
                                                               : j.value("model_type", json()) == "gemma3";
    if (multimodal) {
      ModelConfig c = parse_config(gemma3_text_config(j, where), source_for_errors);
      c.architecture_name = "Gemma3ForConditionalGeneration";
      c.model_type = "gemma3";
      c.multimodal = true;
      c.weight_prefix = "model.language_model.";  // transformers 5's; resolve_weight_names reads the files'
      return c;
    }
  }
  const Keys k(j, where);
  ModelConfig c;

  const ArchInfo& arch = architecture_of(k, where);
  c.arch = arch.arch;
  c.architecture_name = arch.name;
  c.model_type = k.string("model_type");
  const bool qwen2 = c.arch == Architecture::Qwen2, llama = c.arch == Architecture::Llama,
             mistral = c.arch == Architecture::Mistral, qwen3 = c.arch == Architecture::Qwen3,
             phi3 = c.arch == Architecture::Phi3, gemma3 = c.arch == Architecture::Gemma3;

  if (k.has("quantization_config"))
    throw Error(where + ": quantized models are not supported (\"quantization_config\" is present)");
  if (gemma3) {  // Gemma3TextConfig's hidden_activation; transformers reads it, not hidden_act
    if (std::string act = k.string("hidden_activation"); !act.empty() && act != "gelu_pytorch_tanh")
      k.fail("hidden_activation", "is \"" + act + "\"; only \"gelu_pytorch_tanh\" is supported");
  } else if (std::string act = k.string("hidden_act"); !act.empty() && act != "silu" && act != "swish") {
    k.fail("hidden_act", "is \"" + act + "\"; only \"silu\" is supported");
  }

  if (gemma3) {  // Gemma3TextConfig's defaults (the multimodal checkpoints' text_config leaves most out)
    c.hidden_size = k.positive_u32("hidden_size", 2304);
    c.num_layers = k.positive_u32("num_hidden_layers", 26);
    c.num_heads = k.positive_u32("num_attention_heads", 8);
    c.intermediate_size = k.positive_u32("intermediate_size", 9216);
    c.vocab_size = k.positive_u32("vocab_size", 262208);
  } else {
    c.hidden_size = k.positive_u32("hidden_size");
    c.num_layers = k.positive_u32("num_hidden_layers");
    c.num_heads = k.positive_u32("num_attention_heads");
    c.intermediate_size = k.positive_u32("intermediate_size");
    c.vocab_size = k.positive_u32("vocab_size");
  }
  // transformers' defaults when the key is absent: Qwen2Config and Qwen3Config 32, MistralConfig 8,
  // Gemma3TextConfig 4, LlamaConfig the query heads. An explicit null means the query heads for all of them.
  if (!j.contains("num_key_value_heads"))
    c.num_kv_heads = qwen2 || qwen3 ? 32 : mistral ? 8 : gemma3 ? 4 : c.num_heads;
  else
    c.num_kv_heads = k.positive_u32("num_key_value_heads", c.num_heads);
  if (k.has("head_dim")) {
    c.head_dim = k.positive_u32("head_dim");
  } else if ((qwen3 || gemma3) && !j.contains("head_dim")) {
    // Qwen3Config's default (128) and Gemma3TextConfig's (256); their attention reads it whatever
    // hidden_size / heads is.
    c.head_dim = qwen3 ? 128 : 256;
  } else {
    if (c.hidden_size % c.num_heads != 0)
      throw Error(where + ": hidden_size " + std::to_string(c.hidden_size) +
                  " is not a multiple of num_attention_heads " + std::to_string(c.num_heads) +
                  " (and no \"head_dim\" is given)");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.num_heads % c.num_kv_heads != 0)
    throw Error(where + ": num_attention_heads " + std::to_string(c.num_heads) +
                " is not a multiple of num_key_value_heads " + std::to_string(c.num_kv_heads));
  if (c.head_dim % 2 != 0)
    throw Error(where + ": head_dim " + std::to_string(c.head_dim) + " is odd (rotary embeddings need pairs)");

  c.max_position_embeddings = k.positive_u32("max_position_embeddings", qwen2 || qwen3 ? 32768
                                                                        : mistral                ? 4096 * 32
                                                                        : phi3                   ? 4096
                                                                        : gemma3                 ? 131072
                                                                                                 : 2048);
  c.rms_norm_eps = k.positive_float("rms_norm_eps", phi3 ? 1e-5 : 1e-6);
  // Phi-4-mini rotates only part of each head (partial_rotary_factor 0.75): no RoPE kernel of ours does.
  if (const json* prf = k.get("partial_rotary_factor"); prf && !(prf->is_number() && prf->get<double>() == 1.0))
    k.fail("partial_rotary_factor", "is " + prf->dump() + "; only 1 (RoPE over the whole head) is supported");
  c.tie_word_embeddings = k.boolean("tie_word_embeddings", gemma3);  // Gemma3TextConfig ties by default

  // RoPE: transformers 5 writes {"rope_parameters": {"rope_type", "rope_theta", ...}}; earlier versions
  // "rope_theta" and "rope_scaling" at the top level.
  if (gemma3) {
    gemma3_rope(c, k, where);
  } else if (const json* p = k.get("rope_parameters"); p && p->is_object()) {
    c.rope_theta =
        Keys(*p, where + ": \"rope_parameters\"").positive_float("rope_theta", k.positive_float("rope_theta", 10000));
    c.rope_scaling = rope_scaling_of(*p, "rope_parameters", where, true);
    if (c.rope_scaling.type == RopeScaling::Type::LongRope)
      longrope_of(c.rope_scaling, *p, "rope_parameters", k, where, c.head_dim, c.max_position_embeddings);
  } else {
    if (p) k.fail("rope_parameters", "must be an object, got " + p->dump());
    c.rope_theta = k.positive_float("rope_theta", 10000);
    if (const json* s = k.get("rope_scaling")) {
      c.rope_scaling = rope_scaling_of(*s, "rope_scaling", where, false);
      if (c.rope_scaling.type == RopeScaling::Type::LongRope)
        longrope_of(c.rope_scaling, *s, "rope_scaling", k, where, c.head_dim, c.max_position_embeddings);
    }
  }

  if (qwen2) {
    c.qkv_bias = true;
  } else if (llama) {
    c.qkv_bias = c.o_bias = k.boolean("attention_bias", false);
    c.mlp_bias = k.boolean("mlp_bias", false);
  } else if (qwen3 || gemma3) {
    c.qkv_bias = c.o_bias = k.boolean("attention_bias", false);  // Qwen3/Gemma3Attention: q, k, v and o alike
  }

  if (gemma3) {
    c.sliding_window = k.positive_u32("sliding_window", 4096);
    c.sliding_layers = gemma3_sliding_layers(c, k);
    c.query_pre_attn_scalar = k.positive_float("query_pre_attn_scalar", 256);
    c.final_logit_softcapping = k.has("final_logit_softcapping") ? k.positive_float("final_logit_softcapping", 1) : 0;
    if (k.has("attn_logit_softcapping"))  // Gemma 2's; Gemma 3 configs set it null
      k.fail("attn_logit_softcapping", "is set; attention logit softcapping is not supported");
    if (k.boolean("use_bidirectional_attention", false))
      k.fail("use_bidirectional_attention", "is true; only causal attention is supported");
  }

  // Sliding window: absent means transformers' default 4096 (Phi3Config's: none), null means none.
  if (phi3 && k.has("sliding_window")) c.sliding_window = k.positive_u32("sliding_window");
  const bool windowed = mistral || ((qwen2 || qwen3) && k.boolean("use_sliding_window", false));
  if (windowed && !j.contains("sliding_window"))
    c.sliding_window = 4096;
  else if (windowed && k.has("sliding_window"))
    c.sliding_window = k.positive_u32("sliding_window");
  if (windowed && (qwen2 || qwen3)) c.max_window_layers = k.u32("max_window_layers", 28);

  const bool llama_like = llama || mistral;  // LlamaConfig and MistralConfig default bos 1, eos 2
  if (!j.contains("bos_token_id")) {
    if (llama_like || phi3) c.bos_token_id = 1;
    if (gemma3) c.bos_token_id = 2;  // Gemma3TextConfig's
  } else if (const json* bos = k.get("bos_token_id")) {
    c.bos_token_id = k.token_id("bos_token_id", *bos);
  }
  if (!j.contains("eos_token_id")) {
    if (llama_like) c.eos_token_ids = {2};
    if (phi3) c.eos_token_ids = {32000};  // Phi3Config's
    if (gemma3) c.eos_token_ids = {1};     // Gemma3TextConfig's
  } else {
    c.eos_token_ids = k.token_ids("eos_token_id");
  }

  c.torch_dtype = k.has("torch_dtype") ? k.string("torch_dtype") : k.string("dtype");
  return c;
}

ModelConfig load_config(const std::filesystem::path& config_json) {
  std::error_code ec;
  const std::filesystem::path path =
      std::filesystem::is_directory(config_json, ec) ? config_json / "config.json" : config_json;
  MappedFile file(path);
  const char* text = reinterpret_cast<const char*>(file.bytes().data());
  json j;
  try {
    j = json::parse(text, text + file.size());
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
  }
  return parse_config(j, path);
}

// Each line is one torch op on f32 tensors; Python scalars enter as f32. (No FMA contraction: the build
// targets baseline x86-64, which has none.)
bool rope_uses_long_factors(const ModelConfig& c, uint64_t end) {
  return c.rope_scaling.type == RopeScaling::Type::LongRope && end > c.rope_scaling.original_max_position_embeddings;
}

std::vector<float> rope_inv_freq_local(const ModelConfig& c) {
  return c.rope_local_theta > 0 ? ops::rope_inv_freq(c.head_dim, c.rope_local_theta) : std::vector<float>{};
}

std::vector<float> rope_inv_freq(const ModelConfig& c, bool long_factors) {
  std::vector<float> inv_freq = ops::rope_inv_freq(c.head_dim, c.rope_theta);
  const RopeScaling& r = c.rope_scaling;
  if (r.type == RopeScaling::Type::LongRope) {
    // base ** (arange(0, D, 2) / D) as torch computes it in f32 (ops::rope_inv_freq's power), times the
    // factors, inverted.
    const std::vector<float>& ext = long_factors ? r.long_factor : r.short_factor;
    for (uint32_t i = 0; i < c.head_dim / 2; ++i) {
      const float exponent = float(2 * i) / float(c.head_dim);
      const float power = float(std::pow(double(c.rope_theta), double(exponent)));
      inv_freq[i] = 1.0f / (ext[i] * power);
    }
  } else if (r.type == RopeScaling::Type::Linear) {
    for (float& f : inv_freq) f = f / r.factor;
  } else if (r.type == RopeScaling::Type::Llama3) {
    const float two_pi = float(2 * std::numbers::pi);  // Python's 2 * math.pi, cast to f32 by torch
    const float old_context = float(r.original_max_position_embeddings);
    // old_context_len / low_freq_factor etc. are Python float divisions, compared against f32 tensors.
    const float low_freq_wavelen = float(double(r.original_max_position_embeddings) / double(r.low_freq_factor));
    const float high_freq_wavelen = float(double(r.original_max_position_embeddings) / double(r.high_freq_factor));
    const float factor_span = float(double(r.high_freq_factor) - double(r.low_freq_factor));
    for (float& f : inv_freq) {
      const float wavelen = (1.0f / f) * two_pi;  // 2 * math.pi / inv_freq
      if (wavelen < high_freq_wavelen) continue;  // high frequencies: kept
      if (wavelen > low_freq_wavelen) {           // low frequencies: divided by factor
        f = f / r.factor;
        continue;
      }
      const float smooth = ((1.0f / wavelen) * old_context - r.low_freq_factor) / factor_span;
      const float scaled = ((1.0f - smooth) * f) / r.factor;
      const float kept = smooth * f;
      f = scaled + kept;
    }
  }
  return inv_freq;
}

}  // namespace ls::model
