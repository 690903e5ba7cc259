#include "train/optimizer_update.h"

#include "ops/optimizer.h"

namespace ls::train {

std::vector<Tensor> lora_matrices(const model::LoraAdapter& a) {
  std::vector<Tensor> out;
  for (const auto& layer : a.layers)
    for (const auto& p : layer)
      if (p.defined()) out.push_back(p.a), out.push_back(p.b);
  return out;
}

void record_zero_grads(vk::Recorder& rec, const model::LoraAdapter& grads) {
  for (const auto& g : lora_matrices(grads)) ops::fill_zero(rec, g);
}

void record_optimizer_update(vk::Recorder& rec, const model::LoraAdapter& params, const model::LoraAdapter& grads,
                             const model::LoraAdapter& exp_avg, const model::LoraAdapter& exp_avg_sq,
                             const Tensor& hyper, const Tensor& sumsq, const Tensor& norm, float max_grad_norm) {
  const auto ps = lora_matrices(params), gs = lora_matrices(grads), ms = lora_matrices(exp_avg),
             vs = lora_matrices(exp_avg_sq);
  ops::grad_sumsq(rec, sumsq, gs);
  ops::clip_scale(rec, hyper, norm, sumsq, max_grad_norm);
  for (size_t i = 0; i < ps.size(); ++i) ops::adamw_step(rec, ps[i], gs[i], ms[i], vs[i], hyper);
}

}  // namespace ls::train
