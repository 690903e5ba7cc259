// The epilogue the matmul kernels share: alpha, bias, the LoRA low-rank term and accumulation into
// C, for one output element. Expects the buffers and `p` of shaders/matmul.comp.
// alpha·acc, plus the bias and the LoRA term where the flags ask for them: C(m, n) before accumulation.
float gemm_value(uint m, uint n, float acc) {
  float v = p.alpha * acc;
  if ((p.flags & 1u) != 0u) v += TO_F32(B_T, bias[n]);
  if ((p.flags & 4u) != 0u) {  // + scale·Σ_r t(m, r)·L(n, r), L [N, rank] or (flag 8) stored [rank, N]
    const uint l_n = (p.flags & 8u) != 0u ? 1u : p.rank, l_r = (p.flags & 8u) != 0u ? p.N : 1u;
    float s = 0.0;
    for (uint r = 0u; r < p.rank; ++r) s = fma(lora_t[m * p.rank + r], lora_l[n * l_n + r * l_r], s);
    v = fma(p.lora_scale, s, v);
  }
  return v;
}

void gemm_store(uint m, uint n, float acc, uint c_base) {
  float v = gemm_value(m, n, acc);
  uint ci = c_base + m * p.c_sm + n;
#ifdef GLU
  const vec2 gr = glu_grads(v, ci);
  c[ci] = FROM_F32(C_T, gr.x);
  glu_dup[ci] = FROM_F32(C_T, gr.y);
#else
  if ((p.flags & 2u) != 0u) v = fma(p.beta, TO_F32(C_T, c[ci]), v);
  c[ci] = FROM_F32(C_T, v);
#endif
}
