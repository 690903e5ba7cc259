#include "inference.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "error.h"
#include "infer/batch_generator.h"
#include "infer/generator.h"

namespace ls::bench {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// GPU time of one profiled program run, by op group (label) and by kernel (time, dispatches).
struct Profile {
  std::map<std::string, double> by_label;
  std::map<std::string, std::pair<double, int>> by_kernel;
  double gpu_ns = 0;
  size_t dispatches = 0;
};

Profile profile_of(const std::vector<vk::Timing>& timings) {
  Profile p;
  for (const auto& t : timings) {
    p.by_label[t.name] += t.ns;
    p.by_kernel[t.kernel].first += t.ns;
    p.by_kernel[t.kernel].second += 1;
    p.gpu_ns += t.ns;
    ++p.dispatches;
  }
  return p;
}

void print_profile(const std::string& what, const Profile& p) {
  std::printf("%s, profiled: %zu dispatches, %.1f us GPU in total\n", what.c_str(), p.dispatches, p.gpu_ns / 1e3);
  for (const auto& [name, ns] : p.by_label) std::printf("  %-24s %9.1f us\n", name.c_str(), ns / 1e3);
  std::printf("by kernel:\n");
  for (const auto& [name, v] : p.by_kernel)
    std::printf("  %-32s %9.1f us in %4d dispatches (%.2f us each)\n", name.c_str(), v.first / 1e3, v.second,
                v.first / 1e3 / v.second);
}
}  // namespace

int run_inference(vk::Device& device, const InferenceBenchOptions& o) {
  double t0 = now_seconds();
  const auto quant = parse_quant(o.quantize);
  if (!quant) throw Error("--quantize: \"" + o.quantize + "\" is not nf4, q8 or none");
  const auto model = model::Model::load(device, o.model_dir, *quant);
  const double load_s = now_seconds() - t0;
  const DType act = o.act == "f32" ? DType::f32
                    : o.act == "f16" ? DType::f16
                                     : (device.report().float16 ? DType::f16 : DType::f32);
  const uint32_t V = model.config.vocab_size;
  std::mt19937 rng(1234);
  auto random_ids = [&](uint32_t n) {
    std::vector<int32_t> ids(n);
    for (auto& id : ids) id = int32_t(rng() % V);
    return ids;
  };
  // The cache's capacity sets decoding's attention splits (ops::attention_cached_forward: one a 64 keys of it)
  const uint32_t context = std::max(o.context, std::max(o.prefill_tokens, o.prompt_tokens + o.new_tokens) + 8);
  std::printf("model %s: %u layers, hidden %u, vocab %u (loaded in %.2f s); activations %s; KV cache %u tokens\n",
              o.model_dir.c_str(), model.config.num_layers, model.config.hidden_size, V, load_s, dtype_name(act),
              context);

  // Prefill: one chunk of prefill_tokens (a program recorded once, replayed).
  infer::Generator gen(device, model, nullptr, {.context = context, .act = act, .max_chunk = o.prefill_tokens});
  const auto prompt = random_ids(o.prefill_tokens);
  gen.prefill(prompt);  // first run: pipelines and program creation
  // One second of prefills before timing: the GPU's clocks drop while pipelines compile, and a few 10 ms
  // runs would be timed before they are back up (seen on the H100: 30 ms for 9.4 ms of GPU work).
  for (double w0 = now_seconds(); now_seconds() - w0 < 1.0;) {
    gen.reset();
    gen.prefill(prompt);
  }
  std::vector<double> prefill_s;
  for (uint32_t r = 0; r < o.repeats; ++r) {
    gen.reset();
    double s = now_seconds();
    gen.prefill(prompt);
    prefill_s.push_back(now_seconds() - s);
  }
  std::sort(prefill_s.begin(), prefill_s.end());
  const double prefill_median = prefill_s[prefill_s.size() / 2];

  // Decode: greedy tokens after a prompt, one replay of the decode program per token.
  gen.reset();
  const auto short_prompt = random_ids(o.prompt_tokens);
  infer::GenerateOptions go{.max_new_tokens = 4};
  gen.generate(short_prompt, go, [](int32_t) { return true; });  // warm-up
  gen.reset();
  go.max_new_tokens = o.new_tokens;
  auto stats = gen.generate(short_prompt, go, [](int32_t) { return true; });

  // GPU time per op group of one decode token and of the prefill (profiled generators: timestamps around
  // every dispatch).
  infer::Generator prof(device, model, nullptr, {.context = context, .act = act, .max_chunk = 1, .profile = true});
  prof.prefill(short_prompt);
  prof.decode(1);
  const Profile decode_profile = profile_of(prof.timings(1));
  infer::Generator prof_prefill(device, model, nullptr,
                                {.context = context, .act = act, .max_chunk = o.prefill_tokens, .profile = true});
  prof_prefill.prefill(prompt);
  const Profile prefill_profile = profile_of(prof_prefill.timings(std::bit_ceil(o.prefill_tokens)));

  const double prefill_tps = o.prefill_tokens / prefill_median;
  const double decode_tps = stats.decode_tokens_per_second();
  std::printf("prefill %u tokens: %.2f ms median of %u -> %.0f tok/s\n", o.prefill_tokens, prefill_median * 1e3,
              o.repeats, prefill_tps);
  std::printf("decode %u tokens after a %u-token prompt: %.3f ms/token -> %.1f tok/s; first token after %.2f ms\n",
              stats.new_tokens, o.prompt_tokens, stats.decode_seconds * 1e3 / std::max(1u, stats.new_tokens), decode_tps,
              stats.first_token_seconds * 1e3);
  print_profile("one decode token", decode_profile);
  print_profile("prefill of " + std::to_string(o.prefill_tokens) + " tokens", prefill_profile);

  // Batched greedy generation: B prompts decoding together, every step one pass over the weights for B tokens.
  nlohmann::json batched = nlohmann::json::array();
  double b1_tps = 0;
  for (uint32_t B : o.batches) {
    infer::BatchGenerator bg(device, model, nullptr, {.context = context, .act = act}, B);
    std::vector<std::vector<int32_t>> prompts;
    for (uint32_t b = 0; b < B; ++b) prompts.push_back(random_ids(o.prompt_tokens));
    const infer::GenerateOptions bo{.max_new_tokens = o.new_tokens};
    auto none = [](size_t, int32_t) { return true; };
    auto done = [](size_t, infer::BatchReply&&) {};
    bg.generate(prompts, bo, none, done);  // warm-up: the programs are recorded, the pipelines made
    const infer::BatchStats st = bg.generate(prompts, bo, none, done);
    const double tps = st.decode_tokens_per_second();
    if (B == 1) b1_tps = tps;
    std::printf("batched B%u: %u prompts of %u tokens, %u new tokens in %u steps: %.3f ms/step -> %.1f tok/s decode "
                "(%.2fx B1), %.1f tok/s with the prefills\n",
                B, st.prompts, o.prompt_tokens, st.new_tokens, st.steps, st.decode_seconds * 1e3 / std::max(1u, st.steps),
                tps, b1_tps > 0 ? tps / b1_tps : 0.0, st.tokens_per_second());
    batched.push_back({{"batch", B},
                       {"steps", st.steps},
                       {"new_tokens", st.new_tokens},
                       {"ms_per_step", st.decode_seconds * 1e3 / std::max(1u, st.steps)},
                       {"decode_tok_s", tps},
                       {"prefill_s", st.prefill_seconds},
                       {"tok_s_with_prefill", st.tokens_per_second()}});
  }

  if (!o.json.empty()) {
    nlohmann::json j = {{"model", o.model_dir},
                        {"device", device.report().name},
                        {"activations", dtype_name(act)},
                        {"prefill_tokens", o.prefill_tokens},
                        {"prefill_ms", prefill_median * 1e3},
                        {"prefill_tok_s", prefill_tps},
                        {"decode_prompt_tokens", o.prompt_tokens},
                        {"decode_tokens", stats.new_tokens},
                        {"decode_ms_per_token", stats.decode_seconds * 1e3 / std::max(1u, stats.new_tokens)},
                        {"decode_tok_s", decode_tps},
                        {"first_token_ms", stats.first_token_seconds * 1e3},
                        {"decode_dispatches", decode_profile.dispatches},
                        {"decode_gpu_us_by_group", nlohmann::json::object()}};
    for (const auto& [name, ns] : decode_profile.by_label) j["decode_gpu_us_by_group"][name] = ns / 1e3;
    for (const auto& [name, v] : decode_profile.by_kernel) j["decode_gpu_us_by_kernel"][name] = v.first / 1e3;
    for (const auto& [name, ns] : prefill_profile.by_label) j["prefill_gpu_us_by_group"][name] = ns / 1e3;
    for (const auto& [name, v] : prefill_profile.by_kernel) j["prefill_gpu_us_by_kernel"][name] = v.first / 1e3;
    if (!batched.empty()) j["batched"] = batched;
    std::ofstream(o.json) << j.dump(1) << "\n";
  }
  return 0;
}

}  // namespace ls::bench
