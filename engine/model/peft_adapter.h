#pragma once
// LoRA adapters in PEFT's format: a folder with adapter_config.json and adapter_model.safetensors
// (keys base_model.model.model.layers.{i}.{self_attn|mlp}.{target}.lora_A.weight [r, in] and
// ...lora_B.weight [out, r]). Read into f32 device tensors (any of F32/F16/BF16 on disk).
// Supported: plain LoRA (and rsLoRA) on q/k/v/o/gate/up/down projections; anything else PEFT can
// express (DoRA, fan_in_fan_out, biases, per-module ranks, modules_to_save, regex targets) is refused
// with an error naming the file and the setting.
#include <filesystem>

#include "model/config.h"
#include "model/lora.h"

namespace ls::model {

// The folder's adapter_config.json and adapter_model.safetensors, checked against the model's shapes.
LoraAdapter load_peft_adapter(vk::Device& device, const ModelConfig& config, const std::filesystem::path& dir);

// The safetensors key of one LoRA matrix, as PEFT names it.
std::string peft_key(size_t layer, LoraTarget target, bool b_matrix);

// [out, in] of a target's base weight.
std::pair<uint32_t, uint32_t> target_shape(const ModelConfig& c, LoraTarget target);

}  // namespace ls::model
