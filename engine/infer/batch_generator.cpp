#include "infer/batch_generator.h"

#include <algorithm>
#include <chrono>
#include <deque>

#include "error.h"
#include "ops/argmax.h"
#include "ops/copy_rows.h"

namespace ls::infer {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Greedy without a penalty: the device's first maximum is the token (torch.argmax, as Sampler's greedy).
bool device_argmax(const SamplerOptions& s) { return s.temperature <= 0.0f && s.repetition_penalty == 1.0f; }
}  // namespace

BatchGenerator::BatchGenerator(vk::Device& device, const model::Model& model, const model::LoraAdapter* adapter,
                               GeneratorOptions options, uint32_t batch)
    : device_(device), model_(model), adapter_(adapter), options_(options), batch_(batch) {
  if (batch_ == 0) throw Error("batched generation: the batch size must be at least 1");
  if (batch_ > 4096) throw Error("batched generation: a batch of " + std::to_string(batch_) + " is past 4096 sequences");
  const uint32_t max_pos = model.config.max_position_embeddings;
  options_.context = std::max<uint32_t>(1, max_pos ? std::min(options_.context, max_pos) : options_.context);
}

// Allocates the slots' caches for `capacity` tokens each and records the step and insert programs (again only
// when the capacity changes).
void BatchGenerator::prepare(uint32_t capacity) {
  if (capacity == capacity_) return;
  const model::ModelConfig& c = model_.config;
  // longrope switches its factors by the sequence's length, per forward; one program for all slots cannot.
  if (model::rope_uses_long_factors(c, capacity) != model::rope_uses_long_factors(c, 1))
    throw Error("batched generation: this model's RoPE factors change past " +
                std::to_string(c.rope_scaling.original_max_position_embeddings) + " tokens (longrope); keep prompt plus " +
                "reply within that (--max-tokens, --context) or generate one prompt at a time");
  step_ = {};
  insert_ = {};
  cache_ = {};
  prefill_.reset();
  GeneratorOptions one = options_;
  one.context = capacity;
  prefill_.emplace(device_, model_, adapter_, one);
  capacity_ = prefill_->capacity();
  cache_ = model::KvCache::allocate(device_, c, capacity_, options_.act, batch_);
  in_ = {Tensor::empty_host(device_, {batch_}, DType::i32, "batch ids"),
         Tensor::empty_host(device_, {batch_}, DType::i32, "batch positions"),
         Tensor::empty_host(device_, {model::kStepSlots}, DType::i32, "step"), model::rope_uses_long_factors(c, 1),
         true};
  logits_ = Tensor::empty(device_, {batch_, c.vocab_size}, DType::f32, "batch logits");
  argmax_ = Tensor::empty_host(device_, {batch_}, DType::i32, "batch argmax");
  slot_row_ = Tensor::empty_host(device_, {1}, DType::i32, "slot row");
  {
    vk::Recorder rec(device_, {.profile = options_.profile});
    model::record_forward(rec, model_, adapter_, cache_, in_, logits_, options_.act);
    ops::argmax_forward(rec, argmax_, logits_);
    step_ = rec.finish();
  }
  {
    // Every layer's k and v rows of the one-sequence cache into slot rows slot_row_ .. + capacity.
    vk::Recorder rec(device_);
    const model::KvCache& from = prefill_->cache();
    const uint32_t row = c.num_kv_heads * c.head_dim;
    for (uint32_t i = 0; i < c.num_layers; ++i)
      for (auto [dst, src] : {std::pair{&cache_.k[i], &from.k[i]}, {&cache_.v[i], &from.v[i]}})
        ops::copy_rows(rec, dst->reshape({batch_ * capacity_, row}), src->reshape({capacity_, row}), slot_row_,
                       {.rows = capacity_, .dst_slot = 0});
    insert_ = rec.finish();
  }
}

void BatchGenerator::finish(uint32_t b, const std::string& reason,
                            const std::function<void(size_t, BatchReply&&)>& on_done) {
  Slot& s = slots_[b];
  s.reply.stop_reason = reason;
  const size_t index = *s.prompt;
  s.prompt.reset();
  on_done(index, std::move(s.reply));
  s.reply = {};
}

bool BatchGenerator::take(uint32_t b, int32_t id, const GenerateOptions& options,
                          const std::function<bool(size_t, int32_t)>& on_token,
                          const std::function<void(size_t, BatchReply&&)>& on_done, BatchStats& stats) {
  Slot& s = slots_[b];
  if (std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end()) {
    finish(b, "eos", on_done);
    return false;
  }
  s.reply.ids.push_back(id);
  s.history.push_back(id);
  ++stats.new_tokens;
  if (!on_token(*s.prompt, id)) {
    finish(b, "stopped", on_done);
    return false;
  }
  if (s.reply.ids.size() >= options.max_new_tokens) {  // its logits are never needed
    finish(b, "max tokens", on_done);
    return false;
  }
  if (s.position >= capacity_) {
    finish(b, "context full", on_done);
    return false;
  }
  s.next = id;
  return true;
}

BatchStats BatchGenerator::generate(std::span<const std::vector<int32_t>> prompts, const GenerateOptions& options,
                                    const std::function<bool(size_t, int32_t)>& on_token,
                                    const std::function<void(size_t, BatchReply&&)>& on_done) {
  validate(options.sampling);
  BatchStats stats;
  stats.prompts = uint32_t(prompts.size());
  if (prompts.empty()) return stats;
  size_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw Error("batched generation: prompt " + std::to_string(i + 1) + " has no tokens");
    if (prompts[i].size() > options_.context)
      throw Error("batched generation: prompt " + std::to_string(i + 1) + " has " + std::to_string(prompts[i].size()) +
                  " tokens, more than the context of " + std::to_string(options_.context));
    longest = std::max(longest, prompts[i].size());
  }
  prepare(uint32_t(std::min<uint64_t>(options_.context, uint64_t(longest) + options.max_new_tokens)));

  const bool on_device = device_argmax(options.sampling);
  slots_.assign(batch_, Slot{});
  std::deque<size_t> waiting;
  for (size_t i = 0; i < prompts.size(); ++i) waiting.push_back(i);

  // Fills free slots from the queue: prefill alone, copy into the slot, the first token from its logits.
  auto fill = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t b = 0; b < batch_; ++b) {
      while (!slots_[b].prompt && !waiting.empty()) {
        const size_t index = waiting.front();
        waiting.pop_front();
        Slot& s = slots_[b];
        s.prompt = index;
        s.reply = {};
        s.reply.prompt_tokens = uint32_t(prompts[index].size());
        s.history.assign(prompts[index].begin(), prompts[index].end());
        SamplerOptions so = options.sampling;
        so.seed += index;
        s.sampler.emplace(so);
        prefill_->reset();
        prefill_->prefill(prompts[index]);
        upload(slot_row_, std::vector<int32_t>{int32_t(b * capacity_)});
        insert_.run();
        s.position = uint32_t(prompts[index].size());
        stats.prompt_tokens += s.reply.prompt_tokens;
        if (options.max_new_tokens == 0) {
          finish(b, "max tokens", on_done);
          continue;
        }
        take(b, s.sampler->sample(prefill_->logits(), s.history), options, on_token, on_done, stats);
      }
    }
    stats.prefill_seconds += seconds_since(t0);
  };

  fill();
  std::vector<int32_t> ids(batch_), positions(batch_);
  while (std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.prompt.has_value(); })) {
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t b = 0; b < batch_; ++b) {
      // A free slot decodes token 0 at position 0 of its own cache, which the next prompt's copy overwrites.
      ids[b] = slots_[b].prompt ? slots_[b].next : 0;
      positions[b] = slots_[b].prompt ? int32_t(slots_[b].position) : 0;
    }
    upload(in_.ids, ids);
    upload(in_.positions, positions);
    step_.run();
    ++stats.steps;
    std::vector<int32_t> chosen;
    std::vector<float> rows;
    if (on_device) chosen = download_i32(argmax_);
    else rows = download(logits_);
    const size_t vocab = model_.config.vocab_size;
    for (uint32_t b = 0; b < batch_; ++b) {
      Slot& s = slots_[b];
      if (!s.prompt) continue;
      ++s.position;
      const int32_t id = on_device ? chosen[b]
                                   : s.sampler->sample(std::span<const float>(rows).subspan(b * vocab, vocab), s.history);
      take(b, id, options, on_token, on_done, stats);
    }
    stats.decode_seconds += seconds_since(t0);
    fill();
  }
  return stats;
}

std::vector<vk::Timing> BatchGenerator::timings() const { return step_.timings(); }

}  // namespace ls::infer
