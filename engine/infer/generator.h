#pragma once
// Generation on one model: a KV cache on the device, prefill programs per chunk size and a decode
// program, each recorded once and replayed (docs/design.md). The context grows with prefill() and
// decode(); reset() empties it. Not thread-safe: one generator per thread.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "infer/gpu_sampler.h"
#include "infer/sampler.h"
#include "model/forward.h"
#include "vk/recorder.h"

namespace ls::infer {

struct GeneratorOptions {
  uint32_t context = 4096;        // KV-cache capacity in tokens (capped at the model's max positions)
  DType act = DType::f32;         // activations entering matmuls: f32, or f16 (tensor cores)
  uint32_t max_chunk = 512;       // longest prefill chunk; prompts go in chunks of powers of two up to it
  bool profile = false;           // timestamps around every dispatch (timings())
  // Tokens decoded a submit after the first new token: one program runs `burst` times the sampler, the step that
  // feeds its token to the forward (ops::decode_advance) and the forward, and the host reads the ids once (no
  // round trip a token). 1: a submit a token. Not with profile, CPU sampling, or across longrope's switch.
  // LORASTUDIO_DECODE_BURST=N overrides it (measurement).
  uint32_t burst = 8;
};

struct GenerateOptions {
  uint32_t max_new_tokens = 256;
  SamplerOptions sampling;
  std::vector<int32_t> stop_ids;  // end of sequence (eos) ids; the stop token is not passed on
};

struct GenerateStats {
  uint32_t prompt_tokens = 0, new_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  double first_token_seconds = 0;  // from generate()'s call to its first new token chosen: prefill and one sample
  std::string stop_reason;        // "eos", "max tokens", "context full", "stopped"
  uint32_t bursts = 0;            // programs that decoded several tokens (GeneratorOptions::burst)
  double prefill_tokens_per_second() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  double decode_tokens_per_second() const { return decode_seconds > 0 ? new_tokens / decode_seconds : 0; }
};

class Generator {
 public:
  Generator(vk::Device& device, const model::Model& model, const model::LoraAdapter* adapter, GeneratorOptions options);
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  uint32_t position() const { return position_; }
  uint32_t capacity() const { return cache_.capacity; }
  // The KV cache, holding the context's keys and values in its first position() rows (BatchGenerator copies it).
  const model::KvCache& cache() const { return cache_; }
  const GeneratorOptions& options() const { return options_; }
  void reset() { truncate(0); }
  // The token ids the KV cache holds, in order (the newest generated token is not among them until it
  // is decoded; a chat front end reuses the common prefix of a re-rendered conversation).
  std::span<const int32_t> context() const { return history_; }
  // Keeps the first n tokens of the context (n <= position()).
  void truncate(uint32_t n);

  // Appends tokens to the context; afterwards logits() are those of the last one. Throws when the
  // context would overflow. With longrope, a call whose factors differ from the cached keys' (the first past
  // the original context, or one back within it after truncate) recomputes the whole context with its own
  // (model::rope_uses_long_factors).
  void prefill(std::span<const int32_t> ids);
  // Appends one token (a prefill of one, on the decode program).
  void decode(int32_t id);
  // f32 logits [V] of the last token appended, downloaded from the device on the first call after a run.
  std::span<const float> logits() const;

  // Prefill of `ids` on an empty context returning the logits of every position, [T × V] row-major
  // (tests compare them with transformers'). Leaves the context holding ids.
  std::vector<float> logits_of_every_position(std::span<const int32_t> ids);

  // Prefills the prompt (appended to the current context), then samples up to max_new_tokens,
  // calling on_token with each new id; on_token returns false to stop. The history the repetition
  // penalty sees is the whole context. Every new token but the last one returned is in the context
  // afterwards. With bursts (GeneratorOptions::burst), on_token sees a burst's tokens after it ran, and
  // logits() throws inside on_token after the first token (options.burst = 1 keeps them each token's). Sampling runs on the device and reads back only the id (infer/gpu_sampler.h); with
  // LORASTUDIO_CPU_SAMPLING=1 on the CPU from downloaded logits (infer::Sampler). Greedy picks the same
  // token either way; a seeded draw reproduces its tokens on each path, not across them.
  GenerateStats generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                         const std::function<bool(int32_t)>& on_token);

  // GPU time per dispatch of the latest run of the program for chunks of `chunk_tokens` (a power of two; 1:
  // decode) with profile on, for benches; empty if none ran.
  std::vector<vk::Timing> timings(uint32_t chunk_tokens) const;

 private:
  struct Chunk {
    model::ForwardInputs in;
    vk::Program program;  // writes logits_
  };
  Chunk& chunk(uint32_t size, bool long_rope);
  void run_chunk(std::span<const int32_t> ids, bool long_rope);
  // The device sampler for these options (kept between calls while they draw alike).
  GpuSampler& sampler(const SamplerOptions& options);
  // Tokens a burst may decode now for new token i (0: none: the single-token path).
  uint32_t burst_size(uint32_t i, const GenerateOptions& options) const;
  // Runs a burst of n tokens from new token i; true when generation ended inside it (stats.stop_reason set).
  bool run_burst(uint32_t n, uint32_t i, const GenerateOptions& options, const std::function<bool(int32_t)>& on_token,
                 GenerateStats& stats);

  struct Burst {
    vk::Program program;
    Tensor out;  // [n] i32 host-visible: the tokens sampled
    uint32_t n = 0;
    bool long_rope = false;
    uint32_t key_bound = 0;  // model::ForwardInputs::key_bound it was recorded with: replayed while the keys fit
  };

  vk::Device& device_;
  const model::Model& model_;
  const model::LoraAdapter* adapter_;
  GeneratorOptions options_;
  model::KvCache cache_;
  std::map<std::pair<uint32_t, bool>, Chunk> chunks_;  // by size and longrope's choice of factors
  uint32_t position_ = 0;
  bool long_cache_ = false;  // longrope: the cached keys were rotated with the long factors
  Tensor logits_;                      // [1, V] f32 of the last token run, on the device
  bool has_logits_ = false;            // logits_ holds the last appended token's logits
  mutable bool logits_copied_ = false; // logits_copy_ holds logits_
  mutable std::vector<float> logits_copy_;
  std::vector<int32_t> history_;
  std::optional<GpuSampler> sampler_;
  std::optional<Burst> burst_;  // recorded for sampler_ and one size
};

}  // namespace ls::infer
