# SwiGLU's elementwise part: y = silu(gate) * up, and its backward. T: storage type of every tensor
# (compute in f32).
foreach(t f32 f16 bf16)
  ls_kernel(silu_mul_${t} silu_mul.comp T=${t})
  ls_kernel(silu_mul_backward_${t} silu_mul_backward.comp T=${t})
endforeach()
