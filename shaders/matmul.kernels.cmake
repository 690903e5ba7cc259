# General matrix product with strides (forward and both backward products of linear layers, LoRA).
# A_T: left operand (activations), B_T: right operand (weights as loaded; also the bias), C_T: output.
foreach(a f32 f16)
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      ls_kernel(gemm_${a}_${b}_${c} matmul.comp A_T=${a} B_T=${b} C_T=${c})
    endforeach()
  endforeach()
endforeach()
# Tensor cores (VK_NV_cooperative_matrix), chosen at run time when the device has them: f16 or f32
# activations (rounded to f16 while staged) with f16, bf16 or f32 right operands (weights, or activations
# in attention's batched products).
foreach(a f32 f16)
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      set(defs A_T=${a} B_T=${b} C_T=${c})
      if(a STREQUAL "f32")
        list(APPEND defs A_IS_F32)
      endif()
      if(b STREQUAL "bf16")
        list(APPEND defs B_IS_BF16)
      elseif(b STREQUAL "f32")
        list(APPEND defs B_IS_F32)
      endif()
      ls_kernel(gemm_coopmat_${a}_${b}_${c} matmul_coopmat.comp ${defs})
    endforeach()
  endforeach()
endforeach()
# Attention's products (f32 × f32): a 64×64 tile of 2×2 subgroups (4×4 matrices of 16×16 as 2×2 per
# subgroup, K step 64). Measured on the H100 (bench/RESULTS.md, session 4) against 64×128 and three
# other tiles; it was the fastest for these shapes, 64×128 for the products with weights.
ls_kernel(gemm_coopmat_f32_f32_f32_t64 matmul_coopmat.comp A_T=f32 B_T=f32 C_T=f32 A_IS_F32 B_IS_F32
          BM=64u BN=64u SG_M=2u SG_N=2u BK=64u)
# Split-K second pass: the partial sums (f32) reduced in order, then the product's epilogue.
foreach(b f32 f16 bf16)
  foreach(c f32 f16)
    ls_kernel(gemm_splitk_reduce_${b}_${c} matmul_splitk_reduce.comp A_T=f32 B_T=${b} C_T=${c})
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
# The same, 16-byte loads and one subgroup per output column, when K and the strides are multiples of 8.
foreach(a f32 f16)
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      set(defs A_T=${a} B_T=${b} C_T=${c})
      if(a STREQUAL "f32")
        list(APPEND defs A_IS_F32=1)
      endif()
      if(b STREQUAL "f32")
        list(APPEND defs B_IS_F32=1)
      elseif(b STREQUAL "bf16")
        list(APPEND defs B_IS_BF16=1)
      endif()
      ls_kernel(matvec8_${a}_${b}_${c} matvec8.comp ${defs})
    endforeach()
  endforeach()
endforeach()
# One side of at most 16 outputs and a long reduction, f32 (LoRA's rank-r products in training): a
# subgroup per long index when its operand is contiguous along k, else an invocation per long index.
ls_kernel(gemm_skinny_rows matmul_skinny.comp A_T=f32 B_T=f32 C_T=f32 ROWS_ALONG_K)
ls_kernel(gemm_skinny_cols matmul_skinny.comp A_T=f32 B_T=f32 C_T=f32)
