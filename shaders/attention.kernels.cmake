# Causal grouped-query self-attention (ops/attention.h). T: storage type of q, k, v, o (compute in f32);
# lse and every backward tensor are f32.
foreach(t f32 f16)
  ls_kernel(attention_${t} attention.comp T=${t})
endforeach()
ls_kernel(attention_backward_dq attention_backward.comp BACKWARD_DQ)
ls_kernel(attention_backward_dkdv attention_backward.comp BACKWARD_DKDV)
# Decoding over a KV cache split across the keys (flash-decoding): partials, then their combination.
foreach(t f32 f16)
  ls_kernel(attention_split_partial_${t} attention_split.comp T=${t} PARTIAL)
  ls_kernel(attention_split_combine_${t} attention_split.comp T=${t})
endforeach()
