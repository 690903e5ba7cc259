#pragma once
// The demo model: a tiny Qwen2-architecture model with random weights and the real Qwen2.5 tokenizer,
// made from a seed on first use and cached in the user's data folder, so that a new user sees training
// work within minutes without downloading anything. It knows nothing; a LoRA adapter on it learns the
// shape of the demo data (demo/demo_data.h), which is all the demo shows.
//
// The folder (<root>/demo-model-v1, root = $XDG_DATA_HOME/lorastudio, by default ~/.local/share/lorastudio)
// is an ordinary Hugging Face model folder, which transformers loads too:
//   config.json              Qwen2ForCausalLM, sizes in kDemoShape, tied embeddings, bf16
//   generation_config.json   eos <|im_end|> and <|endoftext|>
//   model.safetensors        bf16 weights from our own seeded generator (below)
//   tokenizer.json           Qwen2.5's (demo/demo_assets.h), tokenizer_config.json with its chat template
//   README.md                what this model is and what to download for real work
//   lorastudio-demo.json     the stamp, written last: the recipe and each file's size and CRC-32
// Weights: every tensor has its own stream of a SplitMix64 generator seeded from (kDemoSeed, tensor
// name); each value is a 24-bit integer scaled by a power of two and a bound in f32 (uniform, exact in
// IEEE arithmetic), rounded to bf16 to nearest even. No std:: distribution (their algorithms differ
// between standard libraries) and no libm call: the same bytes on every machine, which a test pins.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace ls::demo {

inline constexpr const char* kDemoModelFolder = "demo-model-v1";  // a new recipe gets a new folder
inline constexpr uint64_t kDemoSeed = 20261123;

// V vocabulary (Qwen2.5's embedding rows), C hidden, I intermediate, L layers, H / KV heads of D = C / H.
struct DemoShape {
  uint32_t vocab = 151936, hidden = 64, intermediate = 256, layers = 2, heads = 4, kv_heads = 2;
  uint32_t max_positions = 32768;
};
inline constexpr DemoShape kDemoShape{};

// Called while the model is made: what is being done and how far (0..1).
using Progress = std::function<void(std::string_view stage, double fraction)>;

// The lorastudio data folder: $XDG_DATA_HOME/lorastudio (when absolute), else ~/.local/share/lorastudio
// (the run store's folder). Throws ls::Error when neither variable is set.
std::filesystem::path default_data_root();

struct DemoModel {
  std::filesystem::path dir;
  bool made = false;       // made now (missing or damaged before), not found intact
  double seconds = 0;      // making it took
};

// The demo model folder under root, made first when it is missing or its stamp does not match its
// files (a damaged or half-written folder is replaced). Made in a temporary folder beside it and renamed
// into place, so no reader ever sees a part of it; two processes making it at once both succeed. Throws
// ls::Error naming the path when it cannot be written.
DemoModel ensure_demo_model(const std::filesystem::path& root, const Progress& progress = {});

// The folder holds every file its stamp lists, with the stamp's sizes and CRC-32s, and the stamp is this
// version's recipe.
bool demo_model_intact(const std::filesystem::path& dir);

// Writes the demo model's files into dir (created; existing files are overwritten), the stamp last.
void write_demo_model(const std::filesystem::path& dir, const Progress& progress = {});

// Parameters of the demo model (the tied embedding counted once).
uint64_t demo_parameter_count();

}  // namespace ls::demo
