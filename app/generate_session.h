#pragma once
// What `lorastudio generate` and `chat` load before generating: the device, the model (quantized as asked), its
// tokenizer and chat template, and the adapter if any; and the generation options from the command line.
#include <optional>

#include "generate_command.h"
#include "infer/chat_session.h"
#include "infer/generator.h"
#include "model/lora.h"
#include "model/weights.h"
#include "vk/device.h"

namespace ls::app {

struct GenerateSession {
  vk::Device device;
  model::Model model;
  infer::ChatModelFiles files;
  std::optional<model::LoraAdapter> adapter;

  explicit GenerateSession(const GenerateArgs& a);
  // --act: f32, f16, or auto (f16 where the GPU has tensor cores).
  DType act(const GenerateArgs& a) const;
};

// Sampling and stopping from the command line (--max-tokens, --temperature, ...; the model's eos ids unless
// --ignore-eos). Throws ls::Error naming a bad option.
infer::GenerateOptions generation_options(const GenerateArgs& a, const GenerateSession& s);

}  // namespace ls::app
