#pragma once
// LoRA adapters in PEFT's format: a folder with adapter_config.json and adapter_model.safetensors
// (keys base_model.model.model.layers.{i}.{self_attn|mlp}.{target}.lora_A.weight [r, in] and
// ...lora_B.weight [out, r]). Read into f32 device tensors (any of F32/F16/BF16 on disk); written as F32.
// Supported: plain LoRA (and rsLoRA) on q/k/v/o/gate/up/down projections; anything else PEFT can
// express (DoRA, fan_in_fan_out, biases, per-module ranks, modules_to_save, regex targets) is refused
// with an error naming the file and the setting.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "model/config.h"
#include "model/lora.h"
#include "model/safetensors.h"

namespace ls::model {

// The folder's adapter_config.json alone: rank, alpha, rsLoRA, dropout and targets (no layers). Throws
// ls::Error naming the file when it is missing or not JSON, or sets anything we do not support (above).
LoraAdapter read_peft_adapter_config(const std::filesystem::path& dir);

// The folder's adapter_config.json and adapter_model.safetensors, checked against the model's shapes.
LoraAdapter load_peft_adapter(vk::Device& device, const ModelConfig& config, const std::filesystem::path& dir);

// Writes the adapter as PEFT's save_pretrained does, into `dir` (created with its parents if missing):
//   adapter_model.safetensors  every defined pair: peft_key() -> A [r, in] and B [out, r], F32, with
//                              metadata {"format": "pt"}
//   adapter_config.json        peft_config_json()
// Never a half-written folder: a new folder is filled under a temporary name beside it and renamed into
// place; into an existing folder each file is written to a temporary name and renamed, the weights first,
// so adapter_config.json (what makes a folder an adapter) is replaced last. Throws ls::Error naming the
// folder when the adapter's shapes do not fit the model, a layer has only some of the targets, or a write
// fails.
void save_peft_adapter(const LoraAdapter& adapter, const ModelConfig& config, const std::filesystem::path& dir,
                       const std::string& base_model_name_or_path);

// adapter_config.json's text: the keys PEFT (0.21) writes for a plain LoRA, sorted, two-space indent as
// PEFT's json.dumps(indent=2, sort_keys=True): peft_type "LORA", task_type "CAUSAL_LM", r, lora_alpha
// (an integer when whole), lora_dropout, target_modules (names sorted), bias "none", fan_in_fan_out
// false, use_rslora, use_dora false, base_model_name_or_path (null when empty), inference_mode true,
// init_lora_weights true, modules_to_save null, layers_to_transform (null, or the adapted layers when
// not all are), rank_pattern {}, alpha_pattern {}. Floats are written as the shortest decimal of the
// float (0.05f as 0.05). Older PEFT versions refuse keys they do not know, so we write no others.
std::string peft_config_json(const LoraAdapter& adapter, const ModelConfig& config,
                             const std::string& base_model_name_or_path);

// The safetensors key of one LoRA matrix, as PEFT names it.
// weight_prefix: the model's (ModelConfig::weight_prefix): a Gemma3ForConditionalGeneration folder's adapter
// keys are base_model.model.model.language_model.layers.{i}... as PEFT names its modules there.
std::string peft_key(size_t layer, LoraTarget target, bool b_matrix, const std::string& weight_prefix = "model.");

// The part of a weight's name before "layers.N." ("model." for model.layers.3.mlp.up_proj.weight; an adapter's
// key with PEFT's "base_model.model." taken off first), or nullopt for a name outside the layers.
std::optional<std::string> layer_prefix(std::string_view name);
// Throws ls::Error, the same for every command that reads an adapter, when the adapter's matrices name the
// layers under another prefix than the model's (`model_prefix`, e.g. ModelConfig::weight_prefix): a
// Gemma3ForCausalLM folder's adapter (model.layers.N) on a Gemma3ForConditionalGeneration folder
// (model.language_model.layers.N), or the reverse. Nothing when they agree or the adapter names no layers.
// `model`: how the message names the model (its folder, or its architecture).
void check_adapter_layer_prefix(const SafeTensors& adapter_weights, const std::string& model_prefix,
                                const std::string& model);

// [out, in] of a target's base weight.
std::pair<uint32_t, uint32_t> target_shape(const ModelConfig& c, LoraTarget target);

}  // namespace ls::model
