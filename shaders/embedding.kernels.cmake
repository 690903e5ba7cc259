# Token embedding lookup and its backward. T: storage type of the table (forward) or of dy (backward);
# O: storage type of y. The backward accumulates into an f32 table gradient. Compute in f32.
foreach(t f32 f16 bf16)
  foreach(o f32 f16 bf16)
    ls_kernel(embedding_${t}_to_${o} embedding.comp T=${t} O=${o})
  endforeach()
  ls_kernel(embedding_backward_${t} embedding_backward.comp T=${t})
endforeach()
