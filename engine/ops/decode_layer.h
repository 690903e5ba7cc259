#pragma once
// A decoded token's layer in one dispatch (shaders/decode_layer.comp): the input norm with q, k, v, RoPE and the
// KV-cache write; attention over the cache; x += o(attn); the post-attention norm with gate, up and act(gate)·up;
// x += down(gated). The same values, bit for bit, as the layer's five decode dispatches
// (ops::norm_qkv_rope_forward, attention_cached_forward, matmul_forward into x, norm_glu_matvec_forward,
// matmul_forward into x), with a grid barrier between stages in place of a dispatch each: the workgroups stay
// resident and wait on a device-scope counter, so there are only as many as the GPU holds at once
// (decode_layer_groups).
//
// Opt-in for now (measurement): LORASTUDIO_DECODE_PERSISTENT=n (1 or 2) runs n workgroups a multiprocessor where
// the driver says how many multiprocessors the GPU has (VK_NV_shader_sm_builtins), else n workgroups; one on a CPU
// device (lavapipe: the tests); unset or 0: off.
#include <optional>

#include "ops/glu.h"
#include "ops/matvec_norm.h"
#include "tensor/tensor.h"
#include "vk/recorder.h"

namespace ls::ops {

struct DecodeLayer {
  Tensor x;                      // [1, C] f32: the residual stream, x_in on entry, x_out on return
  Tensor input_norm, post_norm;  // [C] f32, f16 or bf16: RMSNorm weights as the kernels read them
  QkvRope qkv;                   // q, k, v weights [.., C] and biases (all or none), positions, inv_freq, offsets, slot
  Tensor q;                      // [1, H, D]: RoPE'd q (scratch the layer writes)
  Tensor k_cache, v_cache;       // [S, KV, D], q's dtype
  Tensor attn;                   // [1, H, D]: the attention's output (written)
  Tensor wo;                     // [C, H·D]
  Tensor w_gate, w_up;           // [I, C]
  Tensor w_down;                 // [C, I]
  Tensor gated;                  // [1, I]: act(gate)·up (written), q's dtype
  float eps = 1e-6f;             // the norms'
  float scale = 1.0f;            // the attention's
  GluActivation activation = GluActivation::silu;
};

// The workgroups the dispatch runs (0: the persistent layer is off here, or the device cannot hold it: it needs
// device-scope atomics and subgroups of 8 to 64 lanes).
uint32_t decode_layer_groups(const vk::Device& device);
// Whether the kernel takes these operands (the callers record the five dispatches when not).
bool decode_layer_fits(const vk::Device& device, const DecodeLayer& l);
void decode_layer_forward(vk::Recorder& rec, const DecodeLayer& l);

namespace detail {
// Of `wanted` 256-invocation workgroups an SM (LORASTUDIO_DECODE_PERSISTENT), how many fit one at once given the
// registers an invocation the driver reports for the kernel (none: it does not say, so one): an SM has 65,536.
uint32_t resident_per_multiprocessor(uint32_t wanted, std::optional<uint32_t> registers);
}  // namespace detail

}  // namespace ls::ops
