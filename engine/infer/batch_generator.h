#pragma once
// Batched generation for evaluation (`lorastudio generate --prompts`): B sequences decode together, each
// with its own KV cache, so that one pass over the weights serves B tokens. Each prompt is prefilled alone
// (the Generator's chunked prefill, tensor-core products) and its cache copied into a free slot; then every
// step runs one recorded program over the B slots' next tokens (model::ForwardInputs::rows_are_sequences).
// A slot whose sequence ends takes the next prompt at once (continuous batching), so a long reply does not
// hold the others back.
//
// Greedy decoding without a repetition penalty picks each row's first maximum on the device and reads back
// B ids; any other sampling downloads the B rows of logits and samples each on the CPU (infer::Sampler, a
// sampler a sequence seeded with seed + its prompt's index), so seeded draws repeat run after run but are not
// those of Generator::generate, which samples on the device. Greedy replies equal generate()'s, token for
// token, up to the rounding of different products (one row against B).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "infer/generator.h"

namespace ls::infer {

struct BatchReply {
  std::vector<int32_t> ids;  // the reply's tokens (without a stop id)
  uint32_t prompt_tokens = 0;
  std::string stop_reason;   // "eos", "max tokens", "context full", "stopped"
};

struct BatchStats {
  uint32_t prompts = 0, prompt_tokens = 0, new_tokens = 0, steps = 0;
  double prefill_seconds = 0, decode_seconds = 0;  // prefill: the prompts' prefills and copies into slots
  double tokens_per_second() const {  // new tokens over the whole run (prefill included)
    const double s = prefill_seconds + decode_seconds;
    return s > 0 ? new_tokens / s : 0;
  }
  double decode_tokens_per_second() const { return decode_seconds > 0 ? new_tokens / decode_seconds : 0; }
};

class BatchGenerator {
 public:
  // batch: sequences decoding together (>= 1). options.context caps each sequence's prompt + reply.
  BatchGenerator(vk::Device& device, const model::Model& model, const model::LoraAdapter* adapter,
                 GeneratorOptions options, uint32_t batch);
  BatchGenerator(const BatchGenerator&) = delete;
  BatchGenerator& operator=(const BatchGenerator&) = delete;

  uint32_t batch() const { return batch_; }

  // Generates a reply to every prompt. on_token(prompt index, id) sees each new token of each sequence as it
  // comes (returning false ends that sequence: "stopped"); on_done(prompt index, reply) is called once per
  // prompt as its sequence ends, in the order they end. A prompt longer than the context throws before
  // anything runs. The KV caches are sized for the longest prompt plus max_new_tokens (at most the context).
  BatchStats generate(std::span<const std::vector<int32_t>> prompts, const GenerateOptions& options,
                      const std::function<bool(size_t, int32_t)>& on_token,
                      const std::function<void(size_t, BatchReply&&)>& on_done);

  // GPU time per dispatch of the latest decode step with profile on, for benches; empty if none ran.
  std::vector<vk::Timing> timings() const;

 private:
  struct Slot {
    std::optional<size_t> prompt;  // the prompt index decoding here; empty: free
    uint32_t position = 0;         // tokens in the slot's cache; the next token goes there
    int32_t next = 0;              // the token to decode next
    BatchReply reply;
    std::vector<int32_t> history;  // prompt + reply, for the CPU sampler's repetition penalty
    std::optional<Sampler> sampler;
  };
  void prepare(uint32_t capacity);
  // Takes a token for slot b (from the prefill or a decode step); returns whether the sequence goes on.
  bool take(uint32_t b, int32_t id, const GenerateOptions& options, const std::function<bool(size_t, int32_t)>& on_token,
            const std::function<void(size_t, BatchReply&&)>& on_done, BatchStats& stats);
  void finish(uint32_t b, const std::string& reason, const std::function<void(size_t, BatchReply&&)>& on_done);

  vk::Device& device_;
  const model::Model& model_;
  const model::LoraAdapter* adapter_;
  GeneratorOptions options_;
  uint32_t batch_;
  uint32_t capacity_ = 0;                // each slot's cache, in tokens (0: nothing allocated yet)
  std::optional<Generator> prefill_;     // the one-sequence generator prompts are prefilled on
  model::KvCache cache_;                 // [batch, capacity_, KV, D] per layer
  model::ForwardInputs in_;              // ids and positions [batch], host-written before each step
  Tensor logits_, argmax_, slot_row_;    // [batch, V] f32; [batch] i32 first maxima; [1] i32 a slot's first row
  vk::Program step_, insert_;            // a decode step; the prefilled cache into the slot at slot_row_
  std::vector<Slot> slots_;
};

}  // namespace ls::infer
