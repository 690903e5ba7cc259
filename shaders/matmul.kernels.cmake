# General matrix product with strides (forward and both backward products of linear layers, LoRA).
# A_T: left operand (activations), B_T: right operand (weights as loaded; also the bias), C_T: output.
foreach(a f32 f16)
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      ls_kernel(gemm_${a}_${b}_${c} matmul.comp A_T=${a} B_T=${b} C_T=${c})
    endforeach()
  endforeach()
endforeach()
