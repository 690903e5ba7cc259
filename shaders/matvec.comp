#version 450
#extension GL_GOOGLE_include_directive : require
// The matmul for a few rows (M <= 4: decoding, LoRA on one token): same bindings, push constants
// and epilogue as shaders/matmul.comp, for unit-stride operands (a_sk = b_sk = 1). Bandwidth-bound:
// each workgroup owns 4 output columns n, 64 threads per column stride over K reading W once, and a
// shared-memory tree sums the 64 partials. No tiles, so nothing is wasted when M is 1.
#include "common/types.glsl"

layout(local_size_x = 256) in;

#include "common/gemm_interface.glsl"
#include "common/gemm_epilogue.glsl"

const uint kLanes = 64u, kCols = 4u, kMaxRows = 4u;
shared float partial[kMaxRows][256];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint lane = tid % kLanes, col = tid / kLanes;
  const uint n = (gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x) * kCols + col;
  float acc[kMaxRows];
  for (uint m = 0u; m < kMaxRows; ++m) acc[m] = 0.0;
  if (n < p.N) {
    for (uint k = lane; k < p.K; k += kLanes) {
      float w = TO_F32(B_T, b[n * p.b_sn + k]);
      for (uint m = 0u; m < p.M; ++m) acc[m] = fma(TO_F32(A_T, a[m * p.a_sm + k]), w, acc[m]);
    }
  }
  for (uint m = 0u; m < kMaxRows; ++m) partial[m][tid] = acc[m];
  barrier();
  for (uint stride = kLanes / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride)
      for (uint m = 0u; m < p.M; ++m) partial[m][tid] += partial[m][tid + stride];
    barrier();
  }
  if (lane == 0u && n < p.N)
    for (uint m = 0u; m < p.M; ++m) gemm_store(m, n, partial[m][tid], 0u);
}
