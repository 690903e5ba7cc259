#include "demo/demo_model.h"

#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "demo/demo_assets.h"
#include "error.h"
#include "model/architecture.h"
#include "model/safetensors.h"
#include "tensor/dtype.h"
#include "util/atomic_file.h"

namespace ls::demo {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStampFile = "lorastudio-demo.json";

// Initial values, uniform in [-bound, bound] (std = bound / sqrt(3)). The embedding is large enough that
// the tied lm_head can single out a token (logits of a normalised hidden state against rows of norm ~4);
// a linear layer's std is 1/sqrt(fan_in), so every layer adds as much as it is given and the random
// model's replies are varied nonsense rather than one token repeated.
constexpr float kSqrt3 = 1.7320508f;
constexpr float kEmbedBound = 0.5f * kSqrt3;
constexpr float kBiasBound = 0.02f * kSqrt3;

std::string recipe() {
  const auto& s = kDemoShape;
  return std::string(kDemoModelFolder) + " seed " + std::to_string(kDemoSeed) + " V" + std::to_string(s.vocab) + " C" +
         std::to_string(s.hidden) + " I" + std::to_string(s.intermediate) + " L" + std::to_string(s.layers) + " H" +
         std::to_string(s.heads) + " KV" + std::to_string(s.kv_heads) + " bf16 uniform";
}

// SplitMix64 (Steele, Lea, Flood 2014): one 64-bit state, a fixed output function; its stream is
// the same on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

struct HostTensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<uint16_t> bf16;
};

// n values uniform in [-bound, bound): a 24-bit integer minus 2^23, times 2^-23 (exact), times bound
// (one f32 rounding), then rounded to bf16. bound 0 with constant c: every value c.
HostTensor make_tensor(std::string name, std::vector<uint64_t> shape, float bound, float constant = 0) {
  uint64_t n = 1;
  for (auto d : shape) n *= d;
  HostTensor t{std::move(name), std::move(shape), std::vector<uint16_t>(n)};
  SplitMix64 rng{kDemoSeed ^ fnv1a(t.name)};
  for (auto& v : t.bf16) {
    float x = constant;
    if (bound > 0) x = float(int32_t(rng.next() >> 40) - (int32_t(1) << 23)) * (1.0f / 8388608.0f) * bound;
    v = f32_to_bf16(x);
  }
  return t;
}

std::string config_json() {
  const auto& s = kDemoShape;
  nlohmann::ordered_json j = {
      {"architectures", {"Qwen2ForCausalLM"}},
      {"attention_dropout", 0.0},
      {"bos_token_id", 151643},
      {"eos_token_id", 151645},
      {"hidden_act", "silu"},
      {"hidden_size", s.hidden},
      {"initializer_range", 0.02},
      {"intermediate_size", s.intermediate},
      {"max_position_embeddings", s.max_positions},
      {"max_window_layers", s.layers},
      {"model_type", "qwen2"},
      {"num_attention_heads", s.heads},
      {"num_hidden_layers", s.layers},
      {"num_key_value_heads", s.kv_heads},
      {"rms_norm_eps", 1e-06},
      {"rope_theta", 1000000.0},
      {"sliding_window", nullptr},
      {"tie_word_embeddings", true},
      {"torch_dtype", "bfloat16"},
      {"use_cache", true},
      {"use_sliding_window", false},
      {"vocab_size", s.vocab}};
  return j.dump(2) + "\n";
}

// The demo model's config, parsed as any model's is.
model::ModelConfig demo_config() {
  return model::parse_config(nlohmann::json::parse(config_json()), std::string(kDemoModelFolder) + "/config.json");
}

// How a tensor of the model's table (model/architecture.h) starts: uniform in [-bound, bound], or every
// value `constant` (the norms: 1).
struct Init {
  float bound = 0, constant = 0;
};
Init init_of(const model::ExpectedTensor& e) {
  switch (e.role) {
    case model::TensorRole::embed:
    case model::TensorRole::lm_head: return {.bound = kEmbedBound};
    case model::TensorRole::weight: return {.bound = kSqrt3 / std::sqrt(float(e.shape[1]))};  // std 1/sqrt(fan_in)
    case model::TensorRole::bias: return {.bound = kBiasBound};
    case model::TensorRole::layer_norm:
    case model::TensorRole::final_norm: return {.constant = 1.0f};
  }
  return {};
}

std::vector<HostTensor> make_weights(const Progress& progress) {
  const std::vector<model::ExpectedTensor> table = model::expected_tensors(demo_config());
  std::vector<HostTensor> w;
  if (progress) progress("weights", 0);
  for (const model::ExpectedTensor& e : table) {
    const Init init = init_of(e);
    w.push_back(make_tensor(e.name, e.shape, init.bound, init.constant));
    if (progress) progress("weights", double(w.size()) / double(table.size()));
  }
  return w;
}

std::string generation_config_json() {
  nlohmann::ordered_json j = {{"bos_token_id", 151643}, {"eos_token_id", {151645, 151643}}, {"pad_token_id", 151643}};
  return j.dump(2) + "\n";
}

std::string readme() {
  const auto& s = kDemoShape;
  return "# lorastudio demo model (" + std::string(kDemoModelFolder) +
         ")\n\n"
         "A tiny Qwen2-architecture model with **random weights** (hidden " + std::to_string(s.hidden) + ", " +
         std::to_string(s.layers) + " layers, " + std::to_string(s.heads) + " query and " + std::to_string(s.kv_heads) +
         " key/value heads, tied embeddings, bf16) and the real Qwen2.5 tokenizer and chat template.\n"
         "lorastudio made it from a seed (" + std::to_string(kDemoSeed) +
         ") for `lorastudio --demo` and the app's \"Try the demo\" button. It is untrained: it knows no language, "
         "and a LoRA adapter trained on it learns only the shape of its training data.\n\n"
         "For real work, download a real model, for example\n\n"
         "    huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --local-dir Qwen2.5-0.5B-Instruct\n"
         "    git clone https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct\n\n"
         "Deleting this folder is safe: lorastudio makes it again, byte for byte, when the demo next runs.\n";
}

uint32_t crc32_of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min<size_t>(bytes.size() - at, size_t(1) << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), uInt(n));
    at += n;
  }
  return uint32_t(crc);
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

bool read_file(const fs::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size < 0) return false;
  out.resize(size_t(size));
  in.seekg(0);
  return bool(in.read(out.data(), size));
}

}  // namespace

fs::path default_data_root() {
  // The XDG base directory spec: a relative XDG_DATA_HOME is invalid and must be ignored.
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && fs::path(xdg).is_absolute()) return fs::path(xdg) / "lorastudio";
  const char* home = std::getenv("HOME");
  if (!home || !*home) throw Error("the lorastudio data folder: neither XDG_DATA_HOME (absolute) nor HOME is set");
  return fs::path(home) / ".local" / "share" / "lorastudio";
}

uint64_t demo_parameter_count() {
  uint64_t n = 0;
  for (const model::ExpectedTensor& e : model::expected_tensors(demo_config())) n += e.numel();
  return n;
}

void write_demo_model(const fs::path& dir, const Progress& progress) {
  fs::create_directories(dir);
  auto weights = make_weights(progress);
  std::vector<model::TensorToWrite> tensors;
  for (const auto& t : weights)
    tensors.push_back({t.name, DType::bf16, t.shape,
                       std::as_bytes(std::span(t.bf16.data(), t.bf16.size()))});
  if (progress) progress("tokenizer", 0);
  const std::map<std::string, std::string> files = {
      {"config.json", config_json()},
      {"generation_config.json", generation_config_json()},
      {"model.safetensors", model::serialize_safetensors(tensors, {{"format", "pt"}}, dir / "model.safetensors")},
      {"tokenizer.json", qwen25_tokenizer_json()},
      {"tokenizer_config.json", qwen25_tokenizer_config_json()},
      {"README.md", readme()}};
  weights.clear();
  nlohmann::ordered_json stamp = {{"recipe", recipe()}, {"files", nlohmann::ordered_json::object()}};
  size_t done = 0;
  for (const auto& [name, bytes] : files) {
    if (progress) progress("writing", double(done++) / double(files.size()));
    write_file_atomically(dir / name, bytes);
    stamp["files"][name] = {{"bytes", bytes.size()}, {"crc32", hex32(crc32_of(bytes))}};
  }
  write_file_atomically(dir / kStampFile, stamp.dump(2) + "\n");
  if (progress) progress("writing", 1);
}

bool demo_model_intact(const fs::path& dir) {
  std::string text;
  if (!read_file(dir / kStampFile, text)) return false;
  const auto stamp = nlohmann::json::parse(text, nullptr, false);
  if (stamp.is_discarded() || !stamp.is_object() || stamp.value("recipe", "") != recipe() || !stamp.contains("files") ||
      !stamp["files"].is_object() || !stamp["files"].contains("model.safetensors"))
    return false;
  for (const auto& [name, entry] : stamp["files"].items()) {
    std::string bytes;
    if (!entry.is_object() || !read_file(dir / name, bytes)) return false;
    if (entry.value("bytes", uint64_t(0)) != bytes.size() || entry.value("crc32", "") != hex32(crc32_of(bytes))) return false;
  }
  return true;
}

DemoModel ensure_demo_model(const fs::path& root, const Progress& progress) {
  const fs::path dir = root / kDemoModelFolder;
  if (demo_model_intact(dir)) return {dir, false, 0};
  const auto t0 = std::chrono::steady_clock::now();
  const std::string pid = std::to_string(::getpid());
  const fs::path tmp = root / (std::string(kDemoModelFolder) + ".tmp." + pid);
  const fs::path old = root / (std::string(kDemoModelFolder) + ".old." + pid);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    write_demo_model(tmp, progress);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  // A damaged folder moves aside first (rename() does not replace a folder that has files).
  if (fs::exists(dir, ec)) fs::rename(dir, old, ec);
  fs::rename(tmp, dir, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove_all(tmp, ec);
    if (!demo_model_intact(dir))  // else another process put an intact one there first
      throw Error(dir.string() + ": cannot put the demo model in place (" + why + ")");
  }
  fs::remove_all(old, ec);
  return {dir, true, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

}  // namespace ls::demo
