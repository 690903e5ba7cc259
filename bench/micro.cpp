#include "micro.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>

#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/attention_flash.h"
#include "ops/attention_products.h"
#include "ops/cross_entropy.h"
#include "ops/matmul.h"
#include "ops/matvec_norm.h"
#include "ops/norms.h"
#include "ops/optimizer.h"
#include "ops/quant.h"
#include "ops/softmax.h"
#include "tensor/quant.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::bench {

namespace {

Tensor random_tensor(vk::Device& dev, Shape shape, DType dtype, uint32_t seed, float scale = 1.0f) {
  Tensor t = Tensor::empty(dev, std::move(shape), dtype, "bench input");
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(t.numel());
  for (auto& x : v) x = d(gen);
  upload(t, v);
  return t;
}

struct Case {
  std::string name;
  std::string what;  // dtypes and shape, for the table
  double flops = 0, bytes = 0;
  std::function<void(vk::Recorder&)> record;  // records one op (one or more dispatches)
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int run_micro(vk::Device& dev, int iters, const std::string& json_path, const std::string& filter) {
  using DT = DType;
  std::vector<Case> cases;
  uint32_t seed = 1;

  auto rms = [&](std::string name, uint32_t rows, uint32_t cols) {
    auto x = random_tensor(dev, {rows, cols}, DT::f32, seed++);
    auto w = random_tensor(dev, {cols}, DT::f32, seed++);
    auto y = Tensor::empty(dev, {rows, cols}, DT::f32);
    auto rstd = Tensor::empty(dev, {rows}, DT::f32);
    cases.push_back({name, "f32 [" + std::to_string(rows) + ", " + std::to_string(cols) + "]", 4.0 * rows * cols,
                     8.0 * rows * cols, [=](vk::Recorder& rec) { ops::rms_norm_forward(rec, y, rstd, x, w, 1e-6f); }});
  };
  auto softmax = [&](std::string name, uint32_t rows, uint32_t cols) {
    auto x = random_tensor(dev, {rows, cols}, DT::f32, seed++);
    auto y = Tensor::empty(dev, {rows, cols}, DT::f32);
    cases.push_back({name, "f32 [" + std::to_string(rows) + ", " + std::to_string(cols) + "]", 5.0 * rows * cols,
                     8.0 * rows * cols, [=](vk::Recorder& rec) { ops::softmax_forward(rec, y, x); }});
  };
  auto lora_delta = [&](std::string name, uint32_t M, uint32_t K, uint32_t N, uint32_t r) {
    // The adapter path as the peer times it: (x·Aᵀ)·Bᵀ·s, s folded into B here.
    auto x = random_tensor(dev, {M, K}, DT::f16, seed++);
    auto a = random_tensor(dev, {r, K}, DT::f32, seed++, 0.02f);
    auto b = random_tensor(dev, {N, r}, DT::f32, seed++, 0.04f);
    auto t = Tensor::empty(dev, {M, r}, DT::f32);
    auto y = Tensor::empty(dev, {M, N}, DT::f16);
    cases.push_back({name, "x f16 [" + std::to_string(M) + ", " + std::to_string(K) + "], A/B f32 r" + std::to_string(r),
                     2.0 * M * r * (K + N), 2.0 * M * (K + N) + 4.0 * r * (K + N) + 4.0 * M * r,
                     [=](vk::Recorder& rec) {
                       ops::matmul_forward(rec, t, x, a, Tensor());
                       ops::matmul_forward(rec, y, t, b, Tensor());
                     }});
  };
  auto lora_layer = [&](std::string name, uint32_t M, uint32_t K, uint32_t N, uint32_t r) {
    // The whole LoRA linear layer: y = x·Wᵀ + bias + s·(x·Aᵀ)·Bᵀ, W and bias bf16 as loaded.
    auto x = random_tensor(dev, {M, K}, DT::f16, seed++);
    auto w = random_tensor(dev, {N, K}, DT::bf16, seed++, 0.05f);
    auto bias = random_tensor(dev, {N}, DT::bf16, seed++);
    auto a = random_tensor(dev, {r, K}, DT::f32, seed++, 0.02f);
    auto b = random_tensor(dev, {N, r}, DT::f32, seed++, 0.02f);
    auto t = Tensor::empty(dev, {M, r}, DT::f32);
    auto y = Tensor::empty(dev, {M, N}, DT::f16);
    cases.push_back({name, "x f16 [" + std::to_string(M) + ", " + std::to_string(K) + "], W bf16 [" + std::to_string(N) +
                               ", " + std::to_string(K) + "], r" + std::to_string(r),
                     2.0 * M * N * K + 2.0 * M * r * (K + N), 2.0 * (M * K + N * K + M * N),
                     [=](vk::Recorder& rec) { ops::lora_forward(rec, y, t, x, w, bias, a, b, 2.0f); }});
  };
  auto matmul = [&](std::string name, uint32_t M, uint32_t K, uint32_t N) {
    auto x = random_tensor(dev, {M, K}, DT::f16, seed++);
    auto w = random_tensor(dev, {N, K}, DT::f16, seed++, 0.05f);
    auto y = Tensor::empty(dev, {M, N}, DT::f16);
    cases.push_back({name, "f16 [" + std::to_string(M) + ", " + std::to_string(K) + "] x [" + std::to_string(K) + ", " +
                               std::to_string(N) + "]",
                     2.0 * M * N * K, 2.0 * (M * K + N * K + M * N),
                     [=](vk::Recorder& rec) { ops::matmul_forward(rec, y, x, w, Tensor()); }});
  };

  // The training step's products: f32 activations, f16 weights (the model's bf16 ones as a tensor-core
  // device keeps them: engine/model/weights.cpp), f32 out; forward y = x·Wᵀ and the activation gradient
  // dx = dy·W (W read down its columns).
  auto train_matmul = [&](std::string name, uint32_t M, uint32_t K, uint32_t N, DT act = DT::f32) {
    auto wanted = [&](const char* pass) { return filter.empty() || (name + pass).find(filter) != std::string::npos; };
    if (!wanted("_fwd") && !wanted("_dx")) return;  // the 7B ones hold ~200 MB: only if run
    auto x = random_tensor(dev, {M, K}, act, seed++);
    auto w = random_tensor(dev, {N, K}, DT::f16, seed++, 0.05f);
    auto y = Tensor::empty(dev, {M, N}, DT::f32);
    auto dy = random_tensor(dev, {M, N}, act, seed++);
    auto dx = Tensor::empty(dev, {M, K}, DT::f32);
    const std::string dims = "[" + std::to_string(M) + ", " + std::to_string(K) + "] x W f16 [" + std::to_string(N) +
                             ", " + std::to_string(K) + "]";
    const std::string an = dtype_name(act);
    cases.push_back({name + "_fwd", an + " " + dims, 2.0 * M * N * K, 4.0 * M * K + 2.0 * N * K + 4.0 * M * N,
                     [=](vk::Recorder& rec) { ops::matmul_forward(rec, y, x, w, Tensor()); }});
    cases.push_back({name + "_dx", an + " dy, " + dims, 2.0 * M * N * K, 4.0 * M * K + 2.0 * N * K + 4.0 * M * N,
                     [=](vk::Recorder& rec) { ops::matmul_backward_x(rec, dx, dy, w, false); }});
  };
  // A decoded token's MLP products (one row, f16 activations): the post-attention norm with gate, up and SiLU·up
  // in one pass (I = intermediate, C = hidden), and down accumulating into the f32 residual stream; on f16
  // weights and on nf4 / q8 ones read packed. Bytes: the weights' (packed: codes and absmax codes).
  Tensor map;
  auto decode_mlp = [&](std::string name, uint32_t C, uint32_t I, QuantType q) {
    name += std::string("_") + (q == QuantType::none ? "f16" : quant_name(q));
    if (!filter.empty() && (name + "_glu").find(filter) == std::string::npos &&
        (name + "_down").find(filter) == std::string::npos && (name + "_o").find(filter) == std::string::npos)
      return;
    auto x = random_tensor(dev, {1, C}, DT::f32, seed++), norm = random_tensor(dev, {C}, DT::bf16, seed++);
    auto gated = random_tensor(dev, {1, I}, DT::f16, seed++);
    auto y = Tensor::empty(dev, {1, I}, DT::f16), res = random_tensor(dev, {1, C}, DT::f32, seed++);
    const double weights = 3.0 * C * I * (q == QuantType::none ? 2.0 : q == QuantType::nf4 ? 0.5 + 1.0 / 64 : 1.0 + 4.0 / 64);
    const std::string dims = "C " + std::to_string(C) + ", I " + std::to_string(I);
    if (q == QuantType::none) {
      auto wg = random_tensor(dev, {I, C}, DT::f16, seed++, 0.05f), wu = random_tensor(dev, {I, C}, DT::f16, seed++, 0.05f);
      auto wd = random_tensor(dev, {C, I}, DT::f16, seed++, 0.05f);
      cases.push_back({name + "_glu", dims, 4.0 * C * I, weights * 2 / 3, [=](vk::Recorder& rec) {
                         ops::norm_glu_matvec_forward(rec, y, x, norm, 1e-6f, wg, wu, ops::GluActivation::silu);
                       }});
      cases.push_back({name + "_down", dims, 2.0 * C * I, weights / 3,
                       [=](vk::Recorder& rec) { ops::matmul_forward(rec, res, gated, wd, Tensor(), true); }});
      // o: the attention's output (as many values as the hidden size, heads × head dim) into the stream
      auto attn = random_tensor(dev, {1, C}, DT::f16, seed++), wo = random_tensor(dev, {C, C}, DT::f16, seed++, 0.05f);
      cases.push_back({name + "_o", "C " + std::to_string(C), 2.0 * C * C, 2.0 * C * C,
                       [=](vk::Recorder& rec) { ops::matmul_forward(rec, res, attn, wo, Tensor(), true); }});
      return;
    }
    if (!map.defined()) map = ops::upload_dynamic_map(dev);
    auto packed = [&](uint32_t rows, uint32_t cols) {
      std::mt19937 gen(seed++);
      std::uniform_real_distribution<float> d(-0.05f, 0.05f);
      std::vector<float> v(size_t(rows) * cols);
      for (auto& e : v) e = d(gen);
      return ops::upload_quantized(dev, quantize(q, v), rows, cols, map);
    };
    const ops::QuantWeight wg = packed(I, C), wu = packed(I, C), wd = packed(C, I);
    cases.push_back({name + "_glu", dims, 4.0 * C * I, weights * 2 / 3, [=](vk::Recorder& rec) {
                       ops::norm_glu_matvec_forward(rec, y, x, norm, 1e-6f, wg, wu, ops::GluActivation::silu);
                     }});
    cases.push_back({name + "_down", dims, 2.0 * C * I, weights / 3,
                     [=](vk::Recorder& rec) { ops::quant_matvec_forward(rec, res, gated, wd, Tensor(), true); }});
  };
  for (QuantType q : {QuantType::none, QuantType::nf4, QuantType::q8}) {
    decode_mlp("decode_05b", 896, 4864, q);
    decode_mlp("decode_7b", 3584, 18944, q);
  }
  train_matmul("train_512x896x4864", 512, 896, 4864);
  train_matmul("train_512x4864x896", 512, 4864, 896);
  train_matmul("train_512x896x896", 512, 896, 896);
  train_matmul("train_4096x896x4864", 4096, 896, 4864);
  train_matmul("train_2048x896x16384", 2048, 896, 16384);  // an lm_head chunk
  train_matmul("train16_512x896x4864", 512, 896, 4864, DT::f16);
  train_matmul("train16_512x4864x896", 512, 4864, 896, DT::f16);  // down_proj
  train_matmul("train16_512x896x896", 512, 896, 896, DT::f16);    // q_proj, o_proj
  train_matmul("train16_512x896x128", 512, 896, 128, DT::f16);    // k_proj, v_proj (dx: K = 128)
  train_matmul("train16_512x896x1152", 512, 896, 1152, DT::f16);  // q, k and v as one product
  train_matmul("train16_4096x896x4864", 4096, 896, 4864, DT::f16);
  // A B8 step's lm_head chunk (2,048 rows of Qwen's 151,936 logits; its dx reduces over the vocabulary): 1.8 GB
  // of operands (y f32: 1.2 GB in one binding), so only when the filter names it and a binding holds it.
  if (!filter.empty() && dev.report().max_storage_range >= (uint64_t(2) << 30)) {
    train_matmul("train16_lmhead_2048x896x151936", 2048, 896, 151936, DT::f16);
    train_matmul("train16_lmhead_256x896x151936", 256, 896, 151936, DT::f16);  // a B1 step's chunk
  }
  // Down's dx product as the f16 path records it (d gated [M, I] f16 from dy [M, C] f32), then SiLU·up's backward, against
  // the two in one (ops::matmul_backward_x_glu: _dxglu). FLOPs the product's; bytes: dy, W, and gate, up, d gate and
  // d up (f16) for _dxglu, d gated for _dx16.
  auto down_glu = [&](const std::string& name, uint32_t M, uint32_t C, uint32_t I) {
    if (!filter.empty() && (name + "_dx16").find(filter) == std::string::npos &&
        (name + "_dxglu").find(filter) == std::string::npos)
      return;
    auto dy = random_tensor(dev, {M, C}, DT::f32, seed++), w = random_tensor(dev, {C, I}, DT::f16, seed++, 0.05f);
    auto gate = random_tensor(dev, {M, I}, DT::f16, seed++), up = random_tensor(dev, {M, I}, DT::f16, seed++);
    auto dgated = Tensor::empty(dev, {M, I}, DT::f16), dgate = Tensor::empty(dev, {M, I}, DT::f16);
    auto dup = Tensor::empty(dev, {M, I}, DT::f16);
    const std::string dims = "dy f32 [" + std::to_string(M) + ", " + std::to_string(C) + "] x W f16 [" +
                             std::to_string(C) + ", " + std::to_string(I) + "]";
    const double flops = 2.0 * M * C * I, base = 4.0 * M * C + 2.0 * C * I;
    cases.push_back({name + "_dx16", dims + " -> f16", flops, base + 2.0 * M * I,
                     [=](vk::Recorder& rec) { ops::matmul_backward_x(rec, dgated, dy, w); }});
    cases.push_back({name + "_dxglu", dims + ", SiLU·up's backward", flops, base + 8.0 * M * I, [=](vk::Recorder& rec) {
                       if (!ops::matmul_backward_x_glu(rec, dgate, dup, dy, w, gate, up, ops::GluActivation::silu))
                         throw Error("micro: no kernel takes down's dx with the activation's backward here");
                     }});
  };
  down_glu("down16_512x896x4864", 512, 896, 4864);
  down_glu("down16_4096x896x4864", 4096, 896, 4864);
  if (!filter.empty()) down_glu("down16_7b_512x3584x18944", 512, 3584, 18944);  // 136 MB of weight: only if named
  // Training's SwiGLU on f16 gate and up (model/layer_acts.h F16Operands::gate_up) at B8×T512 of the 0.5B shape:
  // memory-bound, so its figure of merit is GB/s (bytes: forward reads 2 and writes 1 tensor, backward 3 and 2).
  auto silu16 = [&](const std::string& name, uint32_t rows, uint32_t cols) {
    if (!filter.empty() && name.find(filter) == std::string::npos) return;
    const Shape s{rows, cols};
    auto gate = random_tensor(dev, s, DT::f16, seed++), up = random_tensor(dev, s, DT::f16, seed++);
    auto dy = random_tensor(dev, s, DT::f16, seed++);
    auto y = Tensor::empty(dev, s, DT::f16), dgate = Tensor::empty(dev, s, DT::f16), dup = Tensor::empty(dev, s, DT::f16);
    const double bytes = 2.0 * rows * cols;
    const std::string what = "f16 [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
    cases.push_back({name + "_fwd", what, 0, 3 * bytes, [=](vk::Recorder& rec) { ops::silu_mul_forward(rec, y, gate, up); }});
    cases.push_back({name + "_bwd", what, 0, 5 * bytes,
                     [=](vk::Recorder& rec) { ops::silu_mul_backward(rec, dgate, dup, dy, gate, up); }});
  };
  silu16("silu16_4096x4864", 4096, 4864);
  silu16("silu16_512x4864", 512, 4864);
  // Training's loss on a B8 step's f16 logits chunk (2,048 rows of Qwen's 151,936): memory-bound, GB/s (forward reads
  // the logits, backward reads them and writes their gradient). 622 MB a tensor: only when the filter names it.
  auto xent16 = [&](const std::string& name, uint32_t rows, uint32_t vocab) {
    if (filter.empty() || name.find(filter) == std::string::npos) return;
    auto logits = random_tensor(dev, {rows, vocab}, DT::f16, seed++, 4.0f);
    auto dlogits = Tensor::empty(dev, {rows, vocab}, DT::f16);
    auto targets = Tensor::empty(dev, {rows}, DT::i32);
    std::vector<int32_t> t(rows);
    for (uint32_t r = 0; r < rows; ++r) t[r] = int32_t((r * 7919u) % vocab);
    upload(targets, t);
    auto loss = Tensor::empty(dev, {2}, DT::f32), row_loss = Tensor::empty(dev, {rows}, DT::f32);
    auto lse = Tensor::empty(dev, {rows}, DT::f32);
    {  // lse and the loss for the backward case
      vk::Recorder rec(dev);
      ops::cross_entropy_forward(rec, loss, row_loss, lse, logits, targets);
      rec.finish().run();
    }
    const double bytes = 2.0 * rows * vocab;
    const std::string what = "f16 [" + std::to_string(rows) + ", " + std::to_string(vocab) + "]";
    cases.push_back({name + "_fwd", what, 0, bytes, [=](vk::Recorder& rec) {
                       ops::cross_entropy_forward(rec, loss, row_loss, lse, logits, targets);
                     }});
    cases.push_back({name + "_bwd", what, 0, 2 * bytes, [=](vk::Recorder& rec) {
                       ops::cross_entropy_backward(rec, dlogits, logits, targets, lse, loss);
                     }});
  };
  xent16("xent16_2048x151936", 2048, 151936);
  // The 7B shape's products at B1×T512: MLP up/gate, down, and q/o.
  train_matmul("train7b_512x3584x18944", 512, 3584, 18944);
  train_matmul("train7b_512x18944x3584", 512, 18944, 3584);
  train_matmul("train7b_512x3584x3584", 512, 3584, 3584);
  train_matmul("train16_7b_512x3584x18944", 512, 3584, 18944, DT::f16);  // the MLP's operands in f16
  train_matmul("train16_7b_512x18944x3584", 512, 18944, 3584, DT::f16);
  train_matmul("train16_7b_512x3584x3584", 512, 3584, 3584, DT::f16);  // q_proj, o_proj
  train_matmul("train16_7b_512x512x3584", 512, 512, 3584, DT::f16);    // k_proj, v_proj
  // ggml-vulkan's test-backend-ops MUL_MAT shapes, named as there: m output features, n tokens, k inputs
  // (llama.cpp's `test-backend-ops perf -o MUL_MAT` times the same ones: bench/RESULTS.md has the runs side by
  // side), y [n, m] = x [n, k] · W [m, k]ᵀ.
  auto peer_gemm = [&](uint32_t m, uint32_t n, uint32_t k, DT act, DT weight) {
    const std::string name = "gemm_" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + "_" +
                             dtype_name(act) + "_" + dtype_name(weight);
    if (!filter.empty() && name.find(filter) == std::string::npos) return;  // up to 256 MiB an operand: only if run
    auto x = random_tensor(dev, {n, k}, act, seed++);
    auto w = random_tensor(dev, {m, k}, weight, seed++, 0.05f);
    auto y = Tensor::empty(dev, {n, m}, act);
    const std::string an = dtype_name(act), wn = dtype_name(weight);
    cases.push_back({name, an + " x [" + std::to_string(n) + ", " + std::to_string(k) + "] · W " + wn + " [" + std::to_string(m) +
                         ", " + std::to_string(k) + "]",
                     2.0 * m * n * k, double(dtype_size(act)) * (n * k + n * m) + double(dtype_size(weight)) * m * k,
                     [=](vk::Recorder& rec) { ops::matmul_forward(rec, y, x, w, Tensor()); }});
  };
  for (auto [m, n, k] : {std::array<uint32_t, 3>{4864, 512, 896}, {896, 512, 4864}, {4864, 4096, 896},
                         {18944, 512, 3584}, {3584, 512, 18944}, {18944, 4096, 3584}, {8192, 8192, 8192}})
    for (DT act : {DT::f32, DT::f16})
      for (DT weight : {DT::f16, DT::bf16}) peer_gemm(m, n, k, act, weight);
  // Training attention (causal, S = T) by each path: flash kernels, batched products (tensor cores only)
  // and the row kernels. FLOPs counted as the causal half of the four (forward: two) T×T×D products per
  // head; the backward recomputes the scores (five products).
  // io f16: q, k, v and o in f16 as training keeps them (dO and the gradients f32); flash kernels only.
  auto attention = [&](std::string name, ops::AttentionDims d, DT io = DT::f32) {
    if (!filter.empty() && name.find(filter) == std::string::npos) return;
    if (io == DT::f16 && !ops::detail::attention_flash_backward_f16_fit(dev, d)) return;
    const Shape qs{d.B, d.T, d.H, d.D}, ks{d.B, d.S, d.KV, d.D};
    auto q = random_tensor(dev, qs, io, seed++), k = random_tensor(dev, ks, io, seed++);
    auto v = random_tensor(dev, ks, io, seed++), dout = random_tensor(dev, qs, DT::f32, seed++);
    auto o = Tensor::empty(dev, qs, io), lse = Tensor::empty(dev, {d.B, d.H, d.T}, DT::f32);
    auto dq = Tensor::empty(dev, qs, DT::f32), dk = Tensor::empty(dev, ks, DT::f32), dv = Tensor::empty(dev, ks, DT::f32);
    const float scale = 1.0f / std::sqrt(float(d.D));
    {  // o and lse of these inputs, for the backward cases
      vk::Recorder rec(dev);
      ops::attention_forward(rec, o, lse, q, k, v, scale);
      rec.finish().run();
    }
    const double pair = 2.0 * d.B * d.H * double(d.T) * d.S * d.D / 2;  // one causal product
    const std::string what = "B" + std::to_string(d.B) + " T" + std::to_string(d.T) + " H" + std::to_string(d.H) +
                             "/" + std::to_string(d.KV) + " D" + std::to_string(d.D);
    const double io_bytes = 8.0 * double(q.numel() + k.numel());
    if (ops::detail::attention_flash_fit(dev, d, io)) {
      cases.push_back({name + "_fwd_flash", what, 2 * pair, io_bytes, [=](vk::Recorder& rec) {
                         ops::detail::attention_forward_flash(rec, o, lse, q, k, v, d, scale);
                       }});
      cases.push_back({name + "_bwd_flash", what, 5 * pair, 2 * io_bytes, [=](vk::Recorder& rec) {
                         ops::detail::attention_backward_flash(rec, dq, dk, dv, dout, q, k, v, o, lse, d, scale);
                       }});
    }
    if (io == DT::f16) return;
    cases.push_back({name + "_fwd_rows", what, 2 * pair, io_bytes, [=](vk::Recorder& rec) {
                       ops::detail::attention_forward_rows(rec, o, lse, q, k, v, d, scale);
                     }});
    cases.push_back({name + "_bwd_rows", what, 5 * pair, 2 * io_bytes, [=](vk::Recorder& rec) {
                       ops::detail::attention_backward_rows(rec, dq, dk, dv, dout, q, k, v, o, lse, d, scale);
                     }});
    if (ops::detail::attention_products_fit(dev, d, DT::f32)) {
      cases.push_back({name + "_fwd_products", what, 2 * pair, io_bytes, [=](vk::Recorder& rec) {
                         ops::detail::attention_forward_products(rec, o, lse, q, k, v, d, scale);
                       }});
      cases.push_back({name + "_bwd_products", what, 5 * pair, 2 * io_bytes, [=](vk::Recorder& rec) {
                         ops::detail::attention_backward_products(rec, dq, dk, dv, dout, q, k, v, o, lse, d, scale);
                       }});
    }
  };
  // Prefill's attention over a KV cache (past read on the device, 0 here), as engine/infer records it.
  auto cached = [&](std::string name, ops::AttentionDims d, DT dtype) {
    name += std::string("_") + dtype_name(dtype);
    if (!filter.empty() && name.find(filter) == std::string::npos) return;
    const Shape qs{d.B, d.T, d.H, d.D}, ks{d.B, d.S, d.KV, d.D};
    auto q = random_tensor(dev, qs, dtype, seed++), k = random_tensor(dev, ks, dtype, seed++);
    auto v = random_tensor(dev, ks, dtype, seed++);
    auto o = Tensor::empty(dev, qs, dtype);
    auto past = Tensor::empty(dev, {4}, DT::i32);
    {
      vk::Recorder rec(dev);
      ops::fill_zero(rec, past);
      rec.finish().run();
    }
    const float scale = 1.0f / std::sqrt(float(d.D));
    const double pair = 2.0 * d.B * d.H * double(d.T) * d.T * d.D / 2;
    cases.push_back({name, "B" + std::to_string(d.B) + " T" + std::to_string(d.T) + " cache " + std::to_string(d.S),
                     2 * pair, double(dtype_size(dtype)) * double(2 * q.numel() + 2 * k.numel()),
                     [=](vk::Recorder& rec) { ops::attention_cached_forward(rec, o, q, k, v, past, scale); }});
    if (dtype == DT::f32 && ops::detail::attention_flash_coopmat_fit(dev, d, dtype)) {  // f32 on tensor cores
      auto lse = Tensor::empty(dev, {d.B, d.H, d.T}, DT::f32);
      cases.push_back({name + "_tensor_cores", "B" + std::to_string(d.B) + " T" + std::to_string(d.T), 2 * pair,
                       4.0 * double(2 * q.numel() + 2 * k.numel()), [=](vk::Recorder& rec) {
                         ops::detail::attention_forward_flash(rec, o, lse, q, k, v, d, scale, past, true);
                       }});
    }
  };
  for (DT dtype : {DT::f16, DT::f32}) {
    cached("attention_cached_05b_T512", {.B = 1, .T = 512, .S = 520, .H = 14, .KV = 2, .D = 64}, dtype);
    cached("attention_cached_7b_T512", {.B = 1, .T = 512, .S = 520, .H = 28, .KV = 4, .D = 128}, dtype);
  }
  attention("attention_05b_T512", {.B = 1, .T = 512, .S = 512, .H = 14, .KV = 2, .D = 64});
  attention("attention_05b_B8_T512", {.B = 8, .T = 512, .S = 512, .H = 14, .KV = 2, .D = 64});
  attention("attention_7b_T512", {.B = 1, .T = 512, .S = 512, .H = 28, .KV = 4, .D = 128});
  // As training runs them (f16 q, k, v, o: model::layer_acts).
  attention("attention16_05b_T512", {.B = 1, .T = 512, .S = 512, .H = 14, .KV = 2, .D = 64}, DT::f16);
  attention("attention16_05b_B8_T512", {.B = 8, .T = 512, .S = 512, .H = 14, .KV = 2, .D = 64}, DT::f16);
  attention("attention16_7b_T512", {.B = 1, .T = 512, .S = 512, .H = 28, .KV = 4, .D = 128}, DT::f16);
  softmax("softmax_1024", 1, 1024);
  {
    auto x = random_tensor(dev, {1, 1024}, DT::f32, seed++);
    auto w = random_tensor(dev, {1024}, DT::f32, seed++);
    auto b = random_tensor(dev, {1024}, DT::f32, seed++);
    auto y = Tensor::empty(dev, {1, 1024}, DT::f32);
    auto mean = Tensor::empty(dev, {1}, DT::f32);
    auto rstd = Tensor::empty(dev, {1}, DT::f32);
    cases.push_back({"layer_norm_1024", "f32 [1, 1024]", 8.0 * 1024, 12.0 * 1024,
                     [=](vk::Recorder& rec) { ops::layer_norm_forward(rec, y, mean, rstd, x, w, b, 1e-5f); }});
  }
  // The fixed cost of a dispatch (what bounds a decoded token at 0.5B: 123 of them, of little work each): 100 dispatches
  // of almost nothing (fill_zero of 256 bytes) in one op, dependent (one tensor: a barrier between each two) or not
  // (100 tensors). The GPU column sums timestamps around each dispatch; the wall column (one submit and wait of the op,
  // ~40 us of it the submit) includes the barriers' gaps: (wall - submit) / 100 is a dependent dispatch's cost.
  {
    auto one = Tensor::empty(dev, {64}, DT::f32);
    std::vector<Tensor> many;
    for (int i = 0; i < 100; ++i) many.push_back(Tensor::empty(dev, {64}, DT::f32));
    cases.push_back({"dispatch_chain_100_dependent", "100 x fill_zero f32 [64], one tensor", 0, 100 * 256.0,
                     [=](vk::Recorder& rec) {
                       for (int i = 0; i < 100; ++i) ops::fill_zero(rec, one);
                     }});
    cases.push_back({"dispatch_chain_100_independent", "100 x fill_zero f32 [64], 100 tensors", 0, 100 * 256.0,
                     [=](vk::Recorder& rec) {
                       for (const Tensor& t : many) ops::fill_zero(rec, t);
                     }});
  }
  rms("rms_norm_1024", 1, 1024);
  lora_delta("lora_512x512_r8", 1, 512, 512, 8);
  lora_delta("lora_1024x1024_r8", 1, 1024, 1024, 8);
  lora_delta("lora_2048x2048_r8", 1, 2048, 2048, 8);
  for (uint32_t r : {4u, 8u, 16u, 32u, 64u}) lora_delta("lora_1024x1024_r" + std::to_string(r) + "_scaling", 1, 1024, 1024, r);
  matmul("matmul_1024x1024x1024", 1024, 1024, 1024);
  rms("rms_norm_512x896", 512, 896);
  rms("rms_norm_4096x896", 4096, 896);
  softmax("softmax_14x512x512", 14 * 512, 512);
  lora_delta("lora_512tok_896x896_r8", 512, 896, 896, 8);
  lora_layer("lora_layer_512tok_896x896_r8", 512, 896, 896, 8);
  lora_layer("lora_layer_512tok_3584x3584_r8", 512, 3584, 3584, 8);
  lora_layer("lora_layer_512tok_3584x18944_r16", 512, 3584, 18944, 16);
  matmul("matmul_512x3584x3584", 512, 3584, 3584);
  matmul("matmul_512x896x4864", 512, 896, 4864);
  matmul("matmul_512x896x896", 512, 896, 896);
  matmul("matmul_512x4864x896", 512, 4864, 896);
  matmul("matmul_4096x4096x4096", 4096, 4096, 4096);

  nlohmann::json results = nlohmann::json::array();
  // Every case's pipelines built (and its memory touched) before anything is timed: a pipeline the driver
  // takes seconds to build (the coopmat2 ones on the H100, the first time) leaves the GPU idle long enough
  // for its clocks to drop, and the cases after it were timed before they were back up (session 9).
  for (const auto& c : cases) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    vk::Recorder rec(dev);
    c.record(rec);
    rec.finish().run();
  }
  {  // One second of products first: the GPU's clocks are up before the first case is timed. 1024³ each, so
     // that a CPU device (lavapipe) is not held for minutes by one run of the loop.
    auto x = random_tensor(dev, {1024, 1024}, DT::f16, seed++), w = random_tensor(dev, {1024, 1024}, DT::f16, seed++);
    auto y = Tensor::empty(dev, {1024, 1024}, DT::f16);
    vk::Recorder rec(dev);
    for (int i = 0; i < 20; ++i) ops::matmul_forward(rec, y, x, w, Tensor());
    auto warm = rec.finish();
    for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1);) warm.run();
  }
  std::printf("%-32s %-44s %11s %11s %10s %10s\n", "case", "operands", "gpu us/op", "wall us", "GFLOP/s", "GB/s");
  for (const auto& c : cases) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    // GPU time: `iters` ops in one command buffer, timestamps around each dispatch.
    vk::Recorder rec(dev, {.profile = true});
    for (int i = 0; i < iters; ++i) c.record(rec);
    auto program = rec.finish();
    // Warm-up: first touch of memory, and 50 ms of work so the GPU's clocks are up before timing.
    program.run();
    for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50);)
      program.run();
    auto timings = program.timings();
    const size_t per_op = timings.size() / size_t(iters);
    std::vector<double> op_ns;
    for (size_t i = 0; i + per_op <= timings.size(); i += per_op) {
      double ns = 0;
      for (size_t j = 0; j < per_op; ++j) ns += timings[i + j].ns;
      op_ns.push_back(ns);
    }
    double gpu_us = median(op_ns) / 1e3;
    // Wall time of one submit+wait of a single op (what an un-batched caller pays).
    vk::Recorder one(dev);
    c.record(one);
    auto single = one.finish();
    single.run();
    std::vector<double> wall;
    for (int i = 0; i < 30; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      single.run();
      wall.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    double wall_us = median(wall);
    double gflops = c.flops / (gpu_us * 1e3), gbs = c.bytes / (gpu_us * 1e3);
    std::printf("%-32s %-44s %11.2f %11.1f %10.1f %10.1f\n", c.name.c_str(), c.what.c_str(), gpu_us, wall_us, gflops, gbs);
    results.push_back({{"name", c.name}, {"operands", c.what}, {"gpu_us", gpu_us}, {"wall_us_submit_wait", wall_us},
                       {"dispatches_per_op", per_op}, {"gflops", gflops}, {"gbytes_per_s", gbs}});
  }
  if (!json_path.empty()) {
    nlohmann::json doc{{"device", dev.report().name}, {"driver", dev.report().driver_version}, {"iters", iters},
                       {"micro", results}};
    std::ofstream(json_path) << doc.dump(1) << "\n";
  }
  return 0;
}

}  // namespace ls::bench
