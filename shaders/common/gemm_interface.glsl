// Bindings and push constants shared by shaders/matmul.comp and shaders/matmul_coopmat.comp
// (mirrored by GemmParams in engine/ops/matmul.cpp).
layout(binding = 0) readonly buffer BufA { STORE(A_T) a[]; };
#ifndef B_PACKED  // shaders/matmul_coopmat2.comp declares a quantized weight's blocks itself
layout(binding = 1) readonly buffer BufB { STORE(B_T) b[]; };
#endif
layout(binding = 2) buffer BufC { STORE(C_T) c[]; };
layout(binding = 3) readonly buffer BufBias { STORE(B_T) bias[]; };
layout(binding = 4) readonly buffer BufT { float lora_t[]; };
layout(binding = 5) readonly buffer BufL { float lora_l[]; };

layout(push_constant) uniform Params {
  uint M, N, K;
  uint a_sm, a_sk, b_sn, b_sk, c_sm;  // element strides
  uint a_sz, b_sz, c_sz;              // batch strides of the inner batch index (see gemm_bases)
  float alpha, beta;
  uint flags;                         // 1: bias, 2: accumulate into C (beta), 4: LoRA epilogue, 8: its L is [rank, N]
  uint rank;
  float lora_scale;
  uint z_div;                         // z = outer * z_div + inner
  uint a_sz2, b_sz2, c_sz2;           // batch strides of the outer index
  uint b_group;                       // B's inner index is inner / b_group (grouped-query attention)
  uint k_last;                        // split-K (matmul_coopmat2 only): the last slice's K when shorter, else 0
  float q_offset;                     // a quantized B (matmul_coopmat2's Q_NF4 / Q_Q8): nf4's absmax offset
} p;

// Where batch z's operands start: z = outer·z_div + inner; A at outer·a_sz2 + inner·a_sz, B at
// outer·b_sz2 + (inner / b_group)·b_sz, C at outer·c_sz2 + inner·c_sz. A plain batch has z_div = 1.
void gemm_bases(uint z, out uint a_base, out uint b_base, out uint c_base) {
  uint outer = z / p.z_div, inner = z % p.z_div;
  a_base = outer * p.a_sz2 + inner * p.a_sz;
  b_base = outer * p.b_sz2 + (inner / p.b_group) * p.b_sz;
  c_base = outer * p.c_sz2 + inner * p.c_sz;
}

#ifdef GLU
// The gated MLP's activation backward in the epilogue (ops::matmul_backward_x_glu; GLU 1: SiLU, 2: GELU-tanh): the
// product's value is d(act(gate)·up), rounded to C's type as a product storing it would round it; C receives
// d gate and binding 13 d up. gate, up and d up are laid out as C. No accumulation (flag 2) with it.
#include "common/glu.glsl"
#include "common/round_to.glsl"
layout(binding = 11) readonly buffer BufGluGate { STORE(C_T) glu_gate[]; };
layout(binding = 12) readonly buffer BufGluUp { STORE(C_T) glu_up[]; };
layout(binding = 13) writeonly buffer BufGluDup { STORE(C_T) glu_dup[]; };
// (d gate, d up) at C's element i from the product's value v there.
vec2 glu_grads(const in float v, const in uint i) {
  const float d = ROUND_TO(C_T, v), g = TO_F32(C_T, glu_gate[i]), u = TO_F32(C_T, glu_up[i]);
#if GLU == 1
  return silu_mul_grads(d, g, u);
#else
  return gelu_tanh_mul_grads(d, g, u);
#endif
}
#endif
