#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Products with a short reduction (K at most 64, a specialization constant), f32 throughout: LoRA's
// dx += dt·A and y += s·t·Bᵀ, whose K is the rank. One invocation per output element, the K products
// unrolled; the tiled kernels spent most of their time there on tiles of K = 8 (7B: 19 µs a product for
// 7 MB read and written, session 11). Strides as in shaders/matmul.comp; a plain batch of one.
#include "common/types.glsl"

layout(local_size_x = 256) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

layout(constant_id = 1) const uint kK = 8u;

void main() {
  const uint idx = (gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
  if (idx >= p.M * p.N) return;
  const uint m = idx / p.N, n = idx % p.N;
  float acc = 0.0;
  [[unroll]] for (uint k = 0u; k < kK; ++k) acc = fma(a[m * p.a_sm + k * p.a_sk], b[n * p.b_sn + k * p.b_sk], acc);
  gemm_store(m, n, acc, 0u);
}
