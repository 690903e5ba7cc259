#include "train/optimizer_update.h"

#include <span>

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
  if (grads.storage.defined()) return ops::fill_zero(rec, grads.storage);
  for (const auto& g : lora_matrices(grads)) ops::fill_zero(rec, g);
}

namespace {

// Whether the four adapters are flat (model::flat_like) with one layout: every matrix at the same offset in its
// storage. Then the update runs over the storages whole: the padding is zero in all four, and AdamW keeps a zero
// parameter with a zero gradient and zero moments at zero.
bool same_flat_layout(std::span<const model::LoraAdapter* const> adapters) {
  const model::LoraAdapter& first = *adapters[0];
  const auto first_matrices = lora_matrices(first);
  for (const model::LoraAdapter* a : adapters) {
    if (!a->storage.defined() || a->storage.numel() != first.storage.numel()) return false;
    const auto matrices = lora_matrices(*a);
    if (matrices.size() != first_matrices.size()) return false;
    for (size_t i = 0; i < matrices.size(); ++i)
      if (matrices[i].byte_offset() - a->storage.byte_offset() !=
              first_matrices[i].byte_offset() - first.storage.byte_offset() ||
          matrices[i].shape() != first_matrices[i].shape())
        return false;
  }
  return true;
}

}  // namespace

void record_optimizer_update(vk::Recorder& rec, const model::LoraAdapter& params, const model::LoraAdapter& grads,
                             const model::LoraAdapter& exp_avg, const model::LoraAdapter& exp_avg_sq,
                             const Tensor& hyper, const Tensor& sumsq, const Tensor& norm, float max_grad_norm) {
  const model::LoraAdapter* const all[] = {&params, &grads, &exp_avg, &exp_avg_sq};
  if (same_flat_layout(all)) {
    const Tensor flat_grads[] = {grads.storage};
    ops::grad_sumsq(rec, sumsq, flat_grads);
    ops::clip_scale(rec, hyper, norm, sumsq, max_grad_norm);
    ops::adamw_step(rec, params.storage, grads.storage, exp_avg.storage, exp_avg_sq.storage, hyper);
    return;
  }
  const auto ps = lora_matrices(params), gs = lora_matrices(grads), ms = lora_matrices(exp_avg),
             vs = lora_matrices(exp_avg_sq);
  ops::grad_sumsq(rec, sumsq, gs);
  ops::clip_scale(rec, hyper, norm, sumsq, max_grad_norm);
  for (size_t i = 0; i < ps.size(); ++i) ops::adamw_step(rec, ps[i], gs[i], ms[i], vs[i], hyper);
}

}  // namespace ls::train
