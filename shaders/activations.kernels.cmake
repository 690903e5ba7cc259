# Gated MLPs' elementwise part: y = silu(gate) * up (SwiGLU) or gelu_tanh(gate) * up (Gemma's GeGLU), and
# their backwards. T: storage type of every tensor (compute in f32).
foreach(t f32 f16 bf16)
  ls_kernel(silu_mul_${t} silu_mul.comp T=${t})
  ls_kernel(silu_mul_backward_${t} silu_mul_backward.comp T=${t})
  ls_kernel(gelu_tanh_mul_${t} gelu_tanh_mul.comp T=${t})
  ls_kernel(gelu_tanh_mul_backward_${t} gelu_tanh_mul_backward.comp T=${t})
endforeach()
