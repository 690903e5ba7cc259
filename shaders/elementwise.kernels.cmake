# Elementwise ops: y = a + b, y = s * x, y = s * tanh(x / s). T: storage type of x, y (compute in f32).
foreach(t f32 f16 bf16)
  ls_kernel(add_${t} elementwise.comp OP_ADD T=${t})
  ls_kernel(scale_${t} elementwise.comp OP_SCALE T=${t})
  ls_kernel(softcap_${t} elementwise.comp OP_SOFTCAP T=${t})
endforeach()
