# General matrix product with strides (forward and both backward products of linear layers, LoRA).
# A_T: left operand (activations), B_T: right operand (weights as loaded; also the bias), C_T: output.
foreach(a f32 f16)
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      ls_kernel(gemm_${a}_${b}_${c} matmul.comp A_T=${a} B_T=${b} C_T=${c})
    endforeach()
  endforeach()
endforeach()
# Tensor cores (VK_NV_cooperative_matrix), chosen at run time when the device has them: f16
# activations with f16 or bf16 weights.
foreach(b f16 bf16)
  foreach(c f32 f16)
    if(b STREQUAL "bf16")
      ls_kernel(gemm_coopmat_f16_${b}_${c} matmul_coopmat.comp A_T=f16 B_T=${b} C_T=${c} B_IS_BF16)
    else()
      ls_kernel(gemm_coopmat_f16_${b}_${c} matmul_coopmat.comp A_T=f16 B_T=${b} C_T=${c})
    endif()
  endforeach()
endforeach()
# A few rows (M <= 4) with unit-stride operands: a bandwidth-bound matrix-vector kernel.
foreach(a f32 f16)
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      ls_kernel(matvec_${a}_${b}_${c} matvec.comp A_T=${a} B_T=${b} C_T=${c})
    endforeach()
  endforeach()
endforeach()
