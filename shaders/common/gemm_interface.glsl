// Bindings and push constants shared by shaders/matmul.comp and shaders/matmul_coopmat.comp
// (mirrored by GemmParams in engine/ops/matmul.cpp).
layout(binding = 0) readonly buffer BufA { STORE(A_T) a[]; };
layout(binding = 1) readonly buffer BufB { STORE(B_T) b[]; };
layout(binding = 2) buffer BufC { STORE(C_T) c[]; };
layout(binding = 3) readonly buffer BufBias { STORE(B_T) bias[]; };
layout(binding = 4) readonly buffer BufT { float lora_t[]; };
layout(binding = 5) readonly buffer BufL { float lora_l[]; };

layout(push_constant) uniform Params {
  uint M, N, K;
  uint a_sm, a_sk, b_sn, b_sk, c_sm;  // element strides
  uint a_sz, b_sz, c_sz;              // batch strides (z = gl_WorkGroupID.z)
  float alpha, beta;
  uint flags;                         // 1: bias, 2: accumulate into C (beta), 4: LoRA epilogue
  uint rank;
  float lora_scale;
} p;
