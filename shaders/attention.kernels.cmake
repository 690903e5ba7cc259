# Causal grouped-query self-attention (ops/attention.h). T: storage type of q, k, v, o (compute in f32);
# lse and every backward tensor are f32.
foreach(t f32 f16)
  ls_kernel(attention_${t} attention.comp T=${t})
endforeach()
ls_kernel(attention_backward_dq attention_backward.comp BACKWARD_DQ)
ls_kernel(attention_backward_dkdv attention_backward.comp BACKWARD_DKDV)
# Decoding over a KV cache split across the keys (flash-decoding): partials, then their combination.
foreach(t f32 f16)
  if(t STREQUAL "f16")
    ls_kernel(attention_split_partial_${t} attention_split.comp T=${t} PARTIAL T_IS_F16)
  else()
    ls_kernel(attention_split_partial_${t} attention_split.comp T=${t} PARTIAL)
  endif()
  ls_kernel(attention_split_combine_${t} attention_split.comp T=${t})
endforeach()
# Attention through batched matrix products (tensor cores): row steps over [B, H, T, T] score matrices,
# and the sum of per-head key/value gradients over each query group.
ls_kernel(attention_probs_forward attention_rows.comp PROBS_FORWARD)
ls_kernel(attention_probs_from_lse attention_rows.comp PROBS_FROM_LSE)
ls_kernel(attention_dscores attention_rows.comp DSCORES)
ls_kernel(attention_group_sum attention_group_sum.comp)
# The split flash forward's partials added up into o (f32 or f16) and lse.
foreach(t f32 f16)
  ls_kernel(flash_combine_${t} flash_combine.comp T=${t})
endforeach()
# The flash backward's delta = rowsum(do ∘ o) in a pass of its own (o in T), for the cooperative-matrix-2 kernels.
foreach(t f32 f16)
  ls_kernel(flash_delta_${t} flash_delta.comp T=${t})
endforeach()
# Flash attention for training (f32; head dims up to 64 or 128): forward, then dq (and delta), then dk and
# dv per query head.
foreach(d 64 128)
  ls_kernel(flash_attention_forward_d${d} flash_attention.comp FORWARD DMAX=${d})
  ls_kernel(flash_attention_backward_dq_d${d} flash_attention.comp BACKWARD_DQ DMAX=${d})
  ls_kernel(flash_attention_backward_dkdv_d${d} flash_attention.comp BACKWARD_DKDV DMAX=${d})
endforeach()
# The same on tensor cores (GL_NV_cooperative_matrix; head dims a multiple of 16 up to 64 or 128); the
# forward also with f16 q, k, v, o (inference).
foreach(d 64 128)
  ls_kernel(flash_attention_coopmat_forward_d${d} flash_attention_coopmat.comp FORWARD DMAX=${d})
  ls_kernel(flash_attention_coopmat_forward_f16_d${d} flash_attention_coopmat.comp FORWARD IO_F16 DMAX=${d})
  ls_kernel(flash_attention_coopmat_backward_dq_d${d} flash_attention_coopmat.comp BACKWARD_DQ DMAX=${d})
  ls_kernel(flash_attention_coopmat_backward_dkdv_d${d} flash_attention_coopmat.comp BACKWARD_DKDV DMAX=${d})
endforeach()
# The same four through GL_KHR_cooperative_matrix (glslang >= 14), for GPUs without the NV extension.
foreach(d 64 128)
  ls_kernel_cm2(flash_attention_coopmat_khr_forward_d${d} flash_attention_coopmat.comp FORWARD DMAX=${d} COOPMAT_KHR)
  ls_kernel_cm2(flash_attention_coopmat_khr_forward_f16_d${d} flash_attention_coopmat.comp FORWARD IO_F16 DMAX=${d}
                COOPMAT_KHR)
  ls_kernel_cm2(flash_attention_coopmat_khr_backward_dq_d${d} flash_attention_coopmat.comp BACKWARD_DQ DMAX=${d}
                COOPMAT_KHR)
  ls_kernel_cm2(flash_attention_coopmat_khr_backward_dkdv_d${d} flash_attention_coopmat.comp BACKWARD_DKDV DMAX=${d}
                COOPMAT_KHR)
endforeach()
# The same through GL_NV_cooperative_matrix2 (workgroup-scope matrices, the softmax in registers; needs
# glslang >= 14, so ls_kernel_cm2), picked where the device offers it.
foreach(d 64 128)
  ls_kernel_cm2(flash_attention_cm2_forward_d${d} flash_attention_cm2.comp FORWARD DMAX=${d})
  ls_kernel_cm2(flash_attention_cm2_forward_f16_d${d} flash_attention_cm2.comp FORWARD IO_F16 DMAX=${d})
  ls_kernel_cm2(flash_attention_cm2_forward_split_d${d} flash_attention_cm2.comp FORWARD SPLIT DMAX=${d})
  ls_kernel_cm2(flash_attention_cm2_forward_split_f16_d${d} flash_attention_cm2.comp FORWARD SPLIT IO_F16 DMAX=${d})
  ls_kernel_cm2(flash_attention_cm2_backward_dq_d${d} flash_attention_cm2.comp BACKWARD_DQ DMAX=${d})
  ls_kernel_cm2(flash_attention_cm2_backward_dkdv_d${d} flash_attention_cm2.comp BACKWARD_DKDV DMAX=${d})
  ls_kernel_cm2(flash_attention_cm2_backward_dq_f16_d${d} flash_attention_cm2.comp BACKWARD_DQ IO_F16 DMAX=${d})
  ls_kernel_cm2(flash_attention_cm2_backward_dkdv_f16_d${d} flash_attention_cm2.comp BACKWARD_DKDV IO_F16 DMAX=${d})
endforeach()
