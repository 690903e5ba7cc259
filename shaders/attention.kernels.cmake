# Causal grouped-query self-attention (ops/attention.h). T: storage type of q, k, v, o (compute in f32);
# lse and every backward tensor are f32.
foreach(t f32 f16)
  ls_kernel(attention_${t} attention.comp T=${t})
endforeach()
ls_kernel(attention_backward_dq attention_backward.comp BACKWARD_DQ)
ls_kernel(attention_backward_dkdv attention_backward.comp BACKWARD_DKDV)
