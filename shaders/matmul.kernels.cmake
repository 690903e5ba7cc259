# General matrix product with strides (forward and both backward products of linear layers, LoRA).
# A_T: left operand (activations), B_T: right operand (weights as loaded; also the bias), C_T: output.
foreach(a f32 f16)
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      ls_kernel(gemm_${a}_${b}_${c} matmul.comp A_T=${a} B_T=${b} C_T=${c})
    endforeach()
  endforeach()
endforeach()
# The same with the gated MLP's activation backward in the epilogue (GLU 1: SiLU, 2: GELU-tanh;
# ops::matmul_backward_x_glu): down's dx product writing d gate and d up.
foreach(glu "silu|1" "gelu|2")
  string(REPLACE "|" ";" glu_parts "${glu}")
  list(GET glu_parts 0 glu_name)
  list(GET glu_parts 1 glu_value)
  foreach(a f32 f16)
    foreach(b f32 f16 bf16)
      foreach(c f32 f16)
        ls_kernel(gemm_glu_${glu_name}_${a}_${b}_${c} matmul.comp A_T=${a} B_T=${b} C_T=${c} GLU=${glu_value})
      endforeach()
    endforeach()
  endforeach()
  foreach(b f32 f16 bf16)
    foreach(c f32 f16)
      ls_kernel(gemm_splitk_reduce_glu_${glu_name}_${b}_${c} matmul_splitk_reduce.comp A_T=f32 B_T=${b} C_T=${c}
                GLU=${glu_value})
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
      # The big tile, 128×128 on 2×2 subgroups of 4×4 matrices, storing straight to C (DIRECT_STORE):
      # for products whose tiles all lie inside C, with no bias or LoRA term (ops/matmul.cpp).
      set(big ${defs} BM=128u BN=128u SG_M=2u SG_N=2u DIRECT_STORE)
      if(c STREQUAL "f16")
        list(APPEND big C_IS_F16)
      endif()
      ls_kernel(gemm_coopmat_big_${a}_${b}_${c} matmul_coopmat.comp ${big})
      # Both again through GL_KHR_cooperative_matrix (glslang >= 14), for GPUs without the NV extension.
      ls_kernel_cm2(gemm_coopmat_khr_${a}_${b}_${c} matmul_coopmat.comp ${defs} COOPMAT_KHR)
      ls_kernel_cm2(gemm_coopmat_khr_big_${a}_${b}_${c} matmul_coopmat.comp ${big} COOPMAT_KHR)
    endforeach()
  endforeach()
endforeach()
# Split-K second pass: the partial sums (f32) reduced in order, then the product's epilogue.
foreach(b f32 f16 bf16)
  foreach(c f32 f16)
    ls_kernel(gemm_splitk_reduce_${b}_${c} matmul_splitk_reduce.comp A_T=f32 B_T=${b} C_T=${c})
  endforeach()
endforeach()
# The same with RoPE on the output as it is written (ROPE: training's q and k products, ops::RopeInReduce).
foreach(b f32 f16 bf16)
  foreach(c f32 f16)
    ls_kernel(gemm_splitk_reduce_rope_${b}_${c} matmul_splitk_reduce.comp A_T=f32 B_T=${b} C_T=${c} ROPE)
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
# Decoding's norm-fused products (shaders/matvec_norm.comp): the f32 residual stream normalised and rounded to
# the activation type <act> inside the product with <w> weights (the norm's weight and the bias of the same
# type); _silu / _gelu: gate and up in one pass, writing act(gate)·up; _qkv: q, k and v with RoPE and the KV-cache
# write (matvec_norm_qkv.comp).
foreach(act f32 f16)
  foreach(w f32 f16 bf16)
    set(defs ACT_T=${act} W_T=${w})
    if(act STREQUAL "f16")
      list(APPEND defs ACT_IS_F16=1)
    endif()
    if(w STREQUAL "f32")
      list(APPEND defs W_IS_F32=1)
    elseif(w STREQUAL "bf16")
      list(APPEND defs W_IS_BF16=1)
    endif()
    ls_kernel(matvec_norm_${act}_${w} matvec_norm.comp ${defs})
    ls_kernel(matvec_norm_silu_${act}_${w} matvec_norm.comp ${defs} GLU_SILU=1)
    ls_kernel(matvec_norm_gelu_${act}_${w} matvec_norm.comp ${defs} GLU_GELU=1)
    ls_kernel(matvec_norm_qkv_${act}_${w} matvec_norm_qkv.comp ${defs})
    # a decoded token's whole layer in one dispatch of persistent workgroups (decode_layer.comp), by MLP activation
    ls_kernel(decode_layer_silu_${act}_${w} decode_layer.comp ${defs} GLU_SILU=1)
    ls_kernel(decode_layer_gelu_${act}_${w} decode_layer.comp ${defs} GLU_GELU=1)
  endforeach()
endforeach()
# One side of at most 16 outputs and a long reduction, f32 (LoRA's rank-r products in training): a
# subgroup per long index when its operand is contiguous along k, else an invocation per long index. The
# _f16a / _f16b forms read an f16 A or B (the long operand: an f16 activation, x in t = x·Aᵀ and dA = dtᵀ·x).
ls_kernel(gemm_skinny_rows matmul_skinny.comp A_T=f32 B_T=f32 C_T=f32 ROWS_ALONG_K)
ls_kernel(gemm_skinny_cols matmul_skinny.comp A_T=f32 B_T=f32 C_T=f32)
ls_kernel(gemm_skinny_rows_f16a matmul_skinny.comp A_T=f16 B_T=f32 C_T=f32 ROWS_ALONG_K)
ls_kernel(gemm_skinny_cols_f16a matmul_skinny.comp A_T=f16 B_T=f32 C_T=f32)
ls_kernel(gemm_skinny_rows_f16b matmul_skinny.comp A_T=f32 B_T=f16 C_T=f32 ROWS_ALONG_K)
ls_kernel(gemm_skinny_cols_f16b matmul_skinny.comp A_T=f32 B_T=f16 C_T=f32)
# A short reduction (K <= 64, f32): LoRA's K = rank products.
ls_kernel(gemm_short_k matmul_short_k.comp A_T=f32 B_T=f32 C_T=f32)
# Tensor cores through VK_NV_cooperative_matrix2 (workgroup-scope matrices, tiles loaded and stored by
# the driver; needs glslang >= 14, so ls_kernel_cm2): f16 × f16 operands (ops/matmul.cpp converts an f32 A
# first), f32 or f16 out, B contiguous along k (gemm_cm2_<tile>) or along n (gemm_cm2_<tile>n, B_ALONG_N).
# Tiles BM×BN×BK, on the invocations ops/matmul.cpp's kCm2Tiles gives each (the workgroup size is a
# specialization constant), which picks one per shape:
#   l 128×256×64 on 256 · t 256×128×64 on 256 · m 128×128×64 on 256 · s 64×64×64 on 128
#   w 64×128×64 on 128 · h 128×64×64 on 128 (more workgroups for the 0.5B shape's products)
#   d 16×128×64 on 128 (a few rows: batched generation's products, K split into short slices)
#   g 192×64×64 on 128 (measurement, LORASTUDIO_CM2_TILE=g: 512 rows in 3 tiles, 0.5B down's dx on one wave)
# gemm_cm2q_<format>_<tile><orientation>: the same with B a quantized weight (nf4, q8) decoded as each tile
# loads (ops/quant_weight.h quant_in_gemm); B_T f16 is its bias's type.
set(ls_cm2_tiles "l|BM=128 BN=256 BK=64" "t|BM=256 BN=128 BK=64"
    "m|BM=128 BN=128 BK=64" "s|BM=64 BN=64 BK=64"
    "w|BM=64 BN=128 BK=64" "h|BM=128 BN=64 BK=64" "d|BM=16 BN=128 BK=64" "g|BM=192 BN=64 BK=64")
foreach(tile ${ls_cm2_tiles})
  string(REPLACE "|" ";" tile_parts "${tile}")
  list(GET tile_parts 0 tile_name)
  list(GET tile_parts 1 tile_defs)
  string(REPLACE " " ";" tile_defs "${tile_defs}")
  foreach(orientation "" n)
    foreach(c f32 f16)
      set(defs A_T=f16 B_T=f16 C_T=${c} ${tile_defs})
      if(orientation STREQUAL "n")
        list(APPEND defs B_ALONG_N)
      endif()
      ls_kernel_cm2(gemm_cm2_${tile_name}${orientation}_f16_f16_${c} matmul_coopmat2.comp ${defs})
      foreach(q nf4 q8)
        string(TOUPPER ${q} Q)
        ls_kernel_cm2(gemm_cm2q_${q}_${tile_name}${orientation}_f16_f16_${c} matmul_coopmat2.comp ${defs} Q_${Q})
      endforeach()
      # gemm_cm2g_<activation>_<tile>n: down's dx product (B along n) in the f16 operands' path with the gated
      # MLP's activation backward in its epilogue (GLU 1: SiLU, 2: GELU-tanh; ops::matmul_backward_x_glu).
      if(orientation STREQUAL "n" AND c STREQUAL "f16")
        ls_kernel_cm2(gemm_cm2g_silu_${tile_name}n_f16_f16_f16 matmul_coopmat2.comp ${defs} GLU=1)
        ls_kernel_cm2(gemm_cm2g_gelu_${tile_name}n_f16_f16_f16 matmul_coopmat2.comp ${defs} GLU=2)
      endif()
    endforeach()
  endforeach()
endforeach()
