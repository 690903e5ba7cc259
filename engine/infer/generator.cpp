#include "infer/generator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <optional>

#include "error.h"
#include "ops/decode_advance.h"

namespace ls::infer {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Generator::Generator(vk::Device& device, const model::Model& model, const model::LoraAdapter* adapter,
                     GeneratorOptions options)
    : device_(device), model_(model), adapter_(adapter), options_(options) {
  if (options_.act != DType::f32 && options_.act != DType::f16)
    throw Error("generator: activations must be f32 or f16, got " + std::string(dtype_name(options_.act)));
  const uint32_t max_pos = model.config.max_position_embeddings;
  options_.context = std::max<uint32_t>(1, max_pos ? std::min(options_.context, max_pos) : options_.context);
  options_.max_chunk = std::max<uint32_t>(1, std::bit_floor(std::min(options_.max_chunk, options_.context)));
  cache_ = model::KvCache::allocate(device, model.config, options_.context, options_.act);
  logits_ = Tensor::empty(device, {1, model.config.vocab_size}, DType::f32, "logits");
}

Generator::Chunk& Generator::chunk(uint32_t size, bool long_rope) {
  auto it = chunks_.find({size, long_rope});
  if (it != chunks_.end()) return it->second;
  Chunk c;
  c.in.ids = Tensor::empty_host(device_, {size}, DType::i32, "ids");
  c.in.positions = Tensor::empty_host(device_, {size}, DType::i32, "positions");
  c.in.step = Tensor::empty_host(device_, {model::kStepSlots}, DType::i32, "step");
  c.in.long_rope = long_rope;
  vk::Recorder rec(device_, {.profile = options_.profile});
  model::record_forward(rec, model_, adapter_, cache_, c.in, logits_, options_.act);
  c.program = rec.finish();
  return chunks_.emplace(std::pair(size, long_rope), std::move(c)).first->second;
}

// Runs one chunk of at most max_chunk tokens, padded up to a power of two. The padding rows compute
// junk that lands in the cache past the real tokens, where the next tokens overwrite it; no real
// query ever sees it (causal).
void Generator::run_chunk(std::span<const int32_t> ids, bool long_rope) {
  const uint32_t n = uint32_t(ids.size());
  const uint32_t size = std::bit_ceil(n);
  Chunk& c = chunk(size, long_rope);
  std::vector<int32_t> padded(size, 0), positions(size), step(model::kStepSlots);
  std::copy(ids.begin(), ids.end(), padded.begin());
  for (uint32_t t = 0; t < size; ++t) positions[t] = int32_t(position_ + t);
  step[model::kPastSlot] = int32_t(position_);
  step[model::kLastRowSlot] = int32_t(n - 1);
  upload(c.in.ids, padded);
  upload(c.in.positions, positions);
  upload(c.in.step, step);
  c.program.run();
  position_ += n;
  has_logits_ = true;
  logits_copied_ = false;
}

void Generator::prefill(std::span<const int32_t> ids) {
  if (ids.empty()) throw Error("generator: prefill of no tokens");
  if (uint64_t(position_) + ids.size() > cache_.capacity)
    throw Error("generator: " + std::to_string(position_ + ids.size()) + " tokens do not fit the context of " +
                std::to_string(cache_.capacity));
  const int32_t vocab = int32_t(model_.config.vocab_size);
  for (int32_t id : ids)
    if (id < 0 || id >= vocab) throw Error("generator: token id " + std::to_string(id) + " is outside the vocabulary");
  // longrope chooses its factors per call as transformers does per forward: by the call's last position, for
  // all its chunks (a prompt's prefill, or one decoded token). A call whose factors are not those of the
  // cached keys computes the whole context again with its own: the first call past the original context
  // (what transformers' Phi3ForCausalLM means to do there, "enforce re-compute cache"), or one after a
  // truncate back within it.
  const bool long_rope = model::rope_uses_long_factors(model_.config, uint64_t(position_) + ids.size());
  std::vector<int32_t> again;
  if (position_ > 0 && long_rope != long_cache_) {
    again.assign(history_.begin(), history_.end());
    again.insert(again.end(), ids.begin(), ids.end());
    ids = again;
    position_ = 0;
    history_.clear();
  }
  for (size_t done = 0; done < ids.size();) {
    size_t n = std::min<size_t>(ids.size() - done, options_.max_chunk);
    run_chunk(ids.subspan(done, n), long_rope);
    done += n;
  }
  long_cache_ = long_rope;
  history_.insert(history_.end(), ids.begin(), ids.end());
}

void Generator::truncate(uint32_t n) {
  if (n > position_) throw Error("generator: cannot truncate the context to more tokens than it holds");
  position_ = n;
  history_.resize(n);
  has_logits_ = false;
}

void Generator::decode(int32_t id) { prefill(std::span<const int32_t>(&id, 1)); }

std::span<const float> Generator::logits() const {
  if (!has_logits_) throw Error("generator: no logits yet (nothing was prefilled)");
  if (!logits_copied_) {
    logits_copy_ = download(logits_);
    logits_copied_ = true;
  }
  return logits_copy_;
}

std::vector<float> Generator::logits_of_every_position(std::span<const int32_t> ids) {
  const uint32_t T = uint32_t(ids.size());
  if (T == 0 || T > cache_.capacity) throw Error("generator: logits_of_every_position needs 1 .. context tokens");
  model::ForwardInputs in{Tensor::empty_host(device_, {T}, DType::i32, "ids"),
                          Tensor::empty_host(device_, {T}, DType::i32, "positions"),
                          Tensor::empty_host(device_, {model::kStepSlots}, DType::i32, "step"),
                          model::rope_uses_long_factors(model_.config, T)};
  Tensor logits = Tensor::empty(device_, {T, model_.config.vocab_size}, DType::f32, "logits");
  vk::Recorder rec(device_);
  model::record_forward(rec, model_, adapter_, cache_, in, logits, options_.act);
  vk::Program program = rec.finish();
  std::vector<int32_t> positions(T);
  for (uint32_t t = 0; t < T; ++t) positions[t] = int32_t(t);
  upload(in.ids, ids);
  upload(in.positions, positions);
  upload(in.step, std::vector<int32_t>{0, int32_t(T - 1)});
  program.run();
  position_ = T;
  long_cache_ = in.long_rope;
  history_.assign(ids.begin(), ids.end());
  has_logits_ = false;
  return download(logits);
}

GpuSampler& Generator::sampler(const SamplerOptions& options) {
  if (!sampler_ || !sampler_->same_settings(options)) {
    burst_.reset();  // it records the sampler's draw
    sampler_.reset();
    sampler_.emplace(device_, logits_, options);
  }
  sampler_->set_seed(options.seed);
  return *sampler_;
}

uint32_t Generator::burst_size(uint32_t i, const GenerateOptions& options) const {
  static const int forced = [] {
    const char* v = std::getenv("LORASTUDIO_DECODE_BURST");
    return v && *v ? std::atoi(v) : -1;
  }();
  const uint32_t n = forced >= 0 ? uint32_t(std::min(forced, 64)) : options_.burst;
  // The first token alone (the time to it is the user's wait); a burst's last token is followed by another draw, so
  // its decode is needed; the cache holds all n; longrope's factors stay those of the cached keys.
  if (n < 2 || i == 0 || options_.profile || !sampler_ || uint64_t(i) + n >= options.max_new_tokens ||
      uint64_t(position_) + n > cache_.capacity ||
      model::rope_uses_long_factors(model_.config, uint64_t(position_) + n) != long_cache_)
    return 0;
  return n;
}

bool Generator::run_burst(uint32_t n, uint32_t i, const GenerateOptions& options,
                          const std::function<bool(int32_t)>& on_token, GenerateStats& stats) {
  Chunk& c = chunk(1, long_cache_);
  // The burst's tokens see at most position_ + n keys. Its program is recorded for a power of two at least that
  // (from 64, one workgroup of decoding's split attention; at most the capacity), and again once the context passes
  // it, so that the attention launches workgroups for the keys there are, not for the whole cache.
  const uint32_t keys = position_ + n;
  if (!burst_ || burst_->n != n || burst_->long_rope != long_cache_ || burst_->key_bound < keys) {
    burst_.reset();
    const uint32_t bound = std::min(cache_.capacity, std::max(64u, std::bit_ceil(keys)));
    Burst b{.out = Tensor::empty_host(device_, {n}, DType::i32, "burst ids"), .n = n, .long_rope = long_cache_,
            .key_bound = bound};
    model::ForwardInputs in = c.in;
    in.key_bound = bound;
    vk::Recorder rec(device_);
    for (uint32_t k = 0; k < n; ++k) {
      sampler_->record(rec);
      ops::decode_advance(rec, sampler_->ids(), c.in.ids, c.in.positions, c.in.step, model::kPastSlot, sampler_->rng(),
                          sampler_->seen(), sampler_->penalty(), sampler_->vocab(), b.out, k);
      model::record_forward(rec, model_, adapter_, cache_, in, logits_, options_.act);
    }
    b.program = rec.finish();
    burst_ = std::move(b);
  }
  std::vector<int32_t> step(model::kStepSlots, 0);
  step[model::kPastSlot] = int32_t(position_);
  upload(c.in.positions, std::vector<int32_t>{int32_t(position_)});
  upload(c.in.step, step);
  sampler_->prime(history_, i);
  burst_->program.run();
  ++stats.bursts;
  const auto* out = static_cast<const int32_t*>(burst_->out.mapped());
  const std::vector<int32_t> ids(out, out + n);
  sampler_->marked(ids);
  has_logits_ = false;  // they are the burst's last token's, not those of a token on_token is shown
  // The cache holds all n tokens; the context keeps those before a stop (the rest is overwritten later).
  auto keep = [&](uint32_t k) {
    position_ += k;
    history_.insert(history_.end(), ids.begin(), ids.begin() + k);
    has_logits_ = k == n;  // the logits are those of the burst's last token
    logits_copied_ = false;
  };
  for (uint32_t k = 0; k < n; ++k) {
    if (std::find(options.stop_ids.begin(), options.stop_ids.end(), ids[k]) != options.stop_ids.end()) {
      stats.stop_reason = "eos";
      keep(k);
      return true;
    }
    ++stats.new_tokens;
    if (!on_token(ids[k])) {
      stats.stop_reason = "stopped";
      keep(k);
      return true;
    }
  }
  keep(n);
  return false;
}

GenerateStats Generator::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<bool(int32_t)>& on_token) {
  GenerateStats stats;
  validate(options.sampling);
  // The sampling program is recorded before the prompt runs (it reads logits_ wherever they come from).
  std::optional<Sampler> cpu;
  GpuSampler* gpu = nullptr;
  if (cpu_sampling_forced()) cpu.emplace(options.sampling);
  else gpu = &sampler(options.sampling);
  const auto start = std::chrono::steady_clock::now();
  auto t0 = start;
  prefill(prompt);
  stats.prompt_tokens = uint32_t(prompt.size());
  stats.prefill_seconds = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  stats.stop_reason = "max tokens";
  for (uint32_t i = 0; i < options.max_new_tokens;) {
    if (const uint32_t n = gpu ? burst_size(i, options) : 0) {
      if (run_burst(n, i, options, on_token, stats)) break;
      i += n;
      continue;
    }
    const int32_t id = cpu ? cpu->sample(logits(), history_) : gpu->sample(history_, i);
    if (i == 0) stats.first_token_seconds = seconds_since(start);
    if (std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end()) {
      stats.stop_reason = "eos";
      break;
    }
    ++stats.new_tokens;
    if (!on_token(id)) {
      stats.stop_reason = "stopped";
      break;
    }
    if (++i == options.max_new_tokens) break;  // the last token's logits are never needed
    if (position_ >= cache_.capacity) {
      stats.stop_reason = "context full";
      break;
    }
    decode(id);
  }
  stats.decode_seconds = seconds_since(t0);
  return stats;
}

std::vector<vk::Timing> Generator::timings(uint32_t chunk_tokens) const {
  auto it = chunks_.find({chunk_tokens, false});
  if (it == chunks_.end()) it = chunks_.find({chunk_tokens, true});  // longrope past its original context
  return it == chunks_.end() ? std::vector<vk::Timing>{} : it->second.program.timings();
}

}  // namespace ls::infer
