# Gated MLPs' elementwise part: y = silu(gate) * up (SwiGLU) or gelu_tanh(gate) * up (Gemma's GeGLU), and
# their backwards. Named <kernel>_<inputs>_<outputs>: T, the storage type of the inputs (compute in f32); the
# outputs of the same type, or f16 from f32 inputs (O_F16: the operands of tensor-core products).
foreach(k silu_mul silu_mul_backward gelu_tanh_mul gelu_tanh_mul_backward)
  foreach(t f32 bf16)
    ls_kernel(${k}_${t}_${t} ${k}.comp T=${t})
  endforeach()
  ls_kernel(${k}_f16_f16 ${k}.comp T=f16 V8)  # eight values a 16-byte load (common/f16x8.glsl)
  ls_kernel(${k}_f32_f16 ${k}.comp T=f32 O_F16)
endforeach()
