#include "train_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "error.h"
#include "model/lora_init.h"
#include "model/training.h"
#include "ops/optimizer.h"
#include "train/optimizer_update.h"
#include "train/schedule.h"

namespace ls::bench {

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int run_train(vk::Device& dev, const TrainBenchOptions& o) {
  const auto quant = parse_quant(o.quantize);
  if (!quant) throw Error("--quantize: \"" + o.quantize + "\" is not nf4, q8 or none");
  const double load_start = now();
  const auto m = model::Model::load(dev, o.model_dir, *quant);
  std::printf("model %s loaded in %.2f s%s\n", o.model_dir.c_str(), now() - load_start,
              *quant == QuantType::none ? "" : (std::string(", projections in ") + quant_name(*quant)).c_str());
  std::vector<model::LoraTarget> targets;
  std::stringstream ss(o.targets);
  for (std::string t; std::getline(ss, t, ',');) {
    auto target = model::parse_target(t);
    if (!target) throw Error("--targets: unknown projection \"" + t + "\"");
    targets.push_back(*target);
  }
  auto adapter = model::init_lora(dev, m.config, targets, o.rank, o.alpha, false, 0.0f, 0);
  // PEFT starts B at zero; give it small values so every gradient path is exercised like mid-training.
  for (auto& layer : adapter.layers)
    for (auto& p : layer)
      if (p.defined()) {
        std::vector<float> v(p.b.numel());
        std::mt19937 rng(1);
        for (auto& x : v) x = float(int(rng() % 2001) - 1000) * 1e-6f;
        upload(p.b, v);
      }
  adapter = model::flat_like(dev, adapter, true);  // as the trainer holds it
  auto grads = model::zero_grads_like(dev, adapter), m1 = model::zero_grads_like(dev, adapter),
       m2 = model::zero_grads_like(dev, adapter);
  const uint32_t B = o.batch, T = o.seq, M = B * T, V = m.config.vocab_size;
  std::mt19937 rng(1234);
  std::vector<int32_t> ids(M), targets_v(M), positions(M);
  for (uint32_t i = 0; i < M; ++i) ids[i] = int32_t(rng() % V), positions[i] = int32_t(i % T);
  for (uint32_t i = 0; i < M; ++i) targets_v[i] = (i % T + 1 < T) ? ids[i + 1] : -100;
  model::TrainBatch batch{.B = B, .T = T, .ids = Tensor::empty(dev, {M}, DType::i32, "ids"),
                          .positions = Tensor::empty(dev, {M}, DType::i32, "positions"),
                          .targets = Tensor::empty(dev, {M}, DType::i32, "targets")};
  upload(batch.ids, ids);
  upload(batch.positions, positions);
  upload(batch.targets, targets_v);
  Tensor loss = Tensor::empty_host(dev, {2}, DType::f32, "loss");
  Tensor hyper = Tensor::empty_host(dev, {ops::kHyperSlots}, DType::f32, "hyper");
  Tensor sumsq = Tensor::empty(dev, {1}, DType::f32, "sumsq"), norm = Tensor::empty_host(dev, {1}, DType::f32, "norm");
  auto record = [&](bool profile) {
    vk::Recorder rec(dev, {.profile = profile});
    {
      vk::Recorder::Label label(rec, "zero grads");
      train::record_zero_grads(rec, grads);
    }
    model::record_train_step(rec, m, adapter, grads, batch, loss, {.recompute = o.grad_checkpoint});
    vk::Recorder::Label label(rec, "optimizer");
    train::record_optimizer_update(rec, adapter, grads, m1, m2, hyper, sumsq, norm, 1.0f);
    return rec.finish();
  };
  vk::Program step = record(false);
  train::OptimizerHyper h;
  std::vector<double> times, losses;
  for (uint32_t s = 1; s <= o.warmup + o.steps; ++s) {
    auto hv = train::hyper_values(h, 1e-4f, s);
    upload(hyper, std::span<const float>(hv));
    double t0 = now();
    step.run();
    if (s > o.warmup) times.push_back(now() - t0);
    losses.push_back(static_cast<const float*>(loss.mapped())[0]);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  const auto mem = dev.memory().stats();  // before the profiled copy of the step allocates its own tensors
  vk::Program prof = record(true);
  prof.run();
  std::map<std::string, double> by_label;
  double gpu_ns = 0;
  for (const auto& t : prof.timings()) by_label[t.name] += t.ns, gpu_ns += t.ns;
  std::printf("train %s: B%u x T%u, r%u alpha %.0f on %s, f32 activations (f16 on tensor cores)%s\n", o.model_dir.c_str(),
              B, T, o.rank, o.alpha, o.targets.c_str(), o.grad_checkpoint ? ", recomputed in the backward" : "");
  std::printf("  %.2f ms/step (median of %u) -> %.0f tok/s; loss %.4f -> %.4f; %zu dispatches, %zu barriers\n",
              median * 1e3, o.steps, M / median, losses.front(), losses.back(), step.dispatch_count(),
              step.barrier_count());
  // Device-local blocks only: the host-visible staging blocks (uploads, the loss readback) are system memory.
  std::printf("  device memory held: %.2f GiB in %llu blocks (in use %.2f GiB, peak %.2f GiB; staging %.2f GiB)\n",
              double(mem.device_block_bytes) / (1 << 30), static_cast<unsigned long long>(mem.blocks),
              double(mem.device_bytes) / (1 << 30), double(mem.peak_device_bytes) / (1 << 30),
              double(mem.block_bytes - mem.device_block_bytes) / (1 << 30));
  std::printf("  one profiled step, %.1f ms GPU:\n", gpu_ns / 1e6);
  for (const auto& [name, ns] : by_label) std::printf("    %-16s %9.2f ms\n", name.c_str(), ns / 1e6);
  // The costliest kernels within their groups, with how many dispatches they took.
  std::map<std::string, std::pair<double, int>> by_kernel;
  for (const auto& t : prof.timings()) {
    auto& k = by_kernel[t.name + " / " + t.kernel];
    k.first += t.ns, k.second += 1;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> top(by_kernel.begin(), by_kernel.end());
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::printf("  costliest kernels (group / kernel: ms, dispatches):\n");
  for (size_t i = 0; i < std::min<size_t>(40, top.size()); ++i)
    std::printf("    %-48s %8.2f ms %5d\n", top[i].first.c_str(), top[i].second.first / 1e6, top[i].second.second);
  if (!o.trace.empty()) {
    std::ofstream trace(o.trace);
    trace << "index\tgroup\tkernel\tus\tbarrier before\n";
    const std::vector<vk::Timing> timings = prof.timings();
    for (size_t i = 0; i < timings.size(); ++i)
      trace << i << '\t' << timings[i].name << '\t' << timings[i].kernel << '\t' << timings[i].ns / 1e3 << '\t'
            << (i < prof.plan().size() && prof.plan()[i].barrier_before ? "barrier" : "") << '\n';
  }
  if (!o.json.empty()) {
    nlohmann::json j = {{"model", o.model_dir}, {"device", dev.report().name}, {"batch", B}, {"seq", T},
                        {"rank", o.rank}, {"targets", o.targets}, {"ms_per_step", median * 1e3},
                        {"tokens_per_s", M / median}, {"memory_gib", double(mem.device_block_bytes) / (1 << 30)}};
    for (const auto& [name, ns] : by_label) j["gpu_ms_by_group"][name] = ns / 1e6;
    std::ofstream(o.json) << j.dump(1) << "\n";
  }
  return 0;
}

}  // namespace ls::bench
