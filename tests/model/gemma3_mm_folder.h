#pragma once
// The tiny Gemma 3 fixture (tests/fixtures/models/gemma3_tiny) rewritten as a Gemma3ForConditionalGeneration
// folder, as the 4B-27B checkpoints are laid out: config.json's text config nested under "text_config" beside a
// "vision_config", the tokenizer files copied, every "model.X" tensor renamed to prefix + "X", and a vision tower
// tensor the loader must ignore. prefix "model.language_model." is how transformers 5 names them,
// "language_model.model." how older checkpoints do.
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_files.h"
#include "model/safetensors.h"

namespace ls::test {

inline void write_gemma3_mm_folder(const std::filesystem::path& out, const std::string& prefix) {
  namespace fs = std::filesystem;
  const fs::path src = fixtures_dir() / "models/gemma3_tiny";
  fs::create_directories(out);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    fs::copy_file(src / f, out / f, fs::copy_options::overwrite_existing);
  nlohmann::json text = nlohmann::json::parse(read_text(src / "config.json"));
  text.erase("architectures");
  const nlohmann::json config = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"},
                                 {"text_config", text}, {"eos_token_id", text["eos_token_id"]},
                                 {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 8}}},
                                 {"image_token_index", 5}};
  write_text(out / "config.json", config.dump(2));
  const bool transformers5 = prefix.starts_with("model.");
  const model::SafeTensors st = model::SafeTensors::open(src / "model.safetensors");
  std::vector<model::TensorToWrite> tensors;
  for (const model::TensorInfo& t : st.tensors()) {
    const std::string name = t.name.starts_with("model.") ? prefix + t.name.substr(6)
                             : transformers5               ? t.name  // lm_head, if untied
                                                           : "language_model." + t.name;
    tensors.push_back({.name = name, .dtype = t.dtype, .shape = t.shape, .bytes = t.bytes});
  }
  const std::vector<float> vision(12, 0.5f);
  tensors.push_back({.name = transformers5 ? "model.vision_tower.patch.weight" : "vision_tower.patch.weight",
                     .dtype = DType::f32, .shape = {3, 4}, .bytes = std::as_bytes(std::span(vision))});
  model::write_safetensors(out / "model.safetensors", tensors, {{"format", "pt"}});
}

}  // namespace ls::test
