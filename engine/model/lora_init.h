#pragma once
// A fresh LoRA adapter, initialised as PEFT does by default (init_lora_weights=True, LoraLayer.
// reset_lora_parameters): A ~ nn.init.kaiming_uniform_(A, a=sqrt(5)), B = 0, so the adapted model starts
// equal to the base model.
//
// kaiming_uniform_ on A [r, in] (fan_in = in, the default mode) draws U(-bound, bound) with
//   gain  = calculate_gain("leaky_relu", a) = sqrt(2 / (1 + a^2)) = sqrt(2 / 6) = 1 / sqrt(3)
//   bound = gain * sqrt(3 / fan_in) = sqrt(3) / sqrt(3) / sqrt(in) = 1 / sqrt(in)
//
// Random numbers: our own generator, the same on every platform (torch's stream cannot be reproduced and
// we do not try). Each matrix (layer, target) has its own SplitMix64 stream, started from
//   state = mix64(seed ^ mix64(layer * 7 + target))     (target: LoraTarget's index; a fused target
//                                                         (Phi-3) its first part's: stream_target())
// so a matrix's values depend only on (seed, layer, target, shape), not on which other targets are
// adapted. Each value takes one 64-bit output x: u = (x >> 40) * 2^-24 (24 bits, exact in float, in
// [0, 1)), value = bound * (2u - 1) in float (2u - 1 is exact; one rounding), in [-bound, bound). A is
// filled row-major.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/lora.h"

namespace ls::model {

// SplitMix64 (Steele, Lea, Flood 2014; the seeding generator of xoshiro): state += 0x9e3779b97f4a7c15,
// then mix64(state). mix64 is its output function.
uint64_t mix64(uint64_t z);
struct SplitMix64 {
  uint64_t state;
  uint64_t next();
};
// bound * (2u - 1) with u from the top 24 bits of x, as above.
float uniform_symmetric(uint64_t x, float bound);

// 1 / sqrt(in_features), rounded once to float.
float lora_a_bound(uint32_t in_features);
// The r * in values of A for (layer, target), row-major.
std::vector<float> lora_a_values(uint32_t rank, uint32_t in_features, uint64_t seed, uint32_t layer, LoraTarget target);

// Throws ls::Error "<where>: target module "q_proj" is not a projection of Phi3ForCausalLM (its projections:
// qkv_proj, o_proj, gate_up_proj, down_proj)" for the first target the model does not have.
void check_targets(const ModelConfig& config, std::span<const LoraTarget> targets, const std::string& where);

// The targets moved to the projections this model has: q_proj, k_proj or v_proj to qkv_proj where the model
// fuses them (Phi-3), gate_proj or up_proj to gate_up_proj; qkv_proj to q_proj, k_proj and v_proj on the
// others, gate_up_proj to gate_proj and up_proj; the rest as they are. In the order of the targets' enum, no
// repeats. The default q_proj,v_proj (the app's ticks, the CLI's --targets) goes through it.
std::vector<LoraTarget> fit_targets(const ModelConfig& config, std::span<const LoraTarget> targets);

// Every layer gets A [rank, in] and B [out, rank] (f32 device tensors) for each target, shapes from
// target_shape(). targets: not empty, no repeats (kept in the given order), each a projection of the model
// (check_targets). Throws ls::Error on rank 0, a non-positive or non-finite alpha, or a dropout outside [0, 1).
LoraAdapter init_lora(vk::Device& device, const ModelConfig& config, std::vector<LoraTarget> targets, uint32_t rank,
                      float alpha, bool rslora, float dropout, uint64_t seed);

}  // namespace ls::model
