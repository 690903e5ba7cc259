# Rotary position embedding (HF rotate_half), forward and backward. T: storage type of x, y (compute in f32).
foreach(t f32 f16 bf16)
  ls_kernel(rope_forward_${t} rope.comp T=${t})
  ls_kernel(rope_backward_${t} rope.comp T=${t} BACKWARD)
endforeach()
# RoPE on q and k with the KV-cache write of k and v, in one pass (inference). T: storage type of all five.
foreach(t f32 f16)
  ls_kernel(rope_kv_${t} rope_kv.comp T=${t})
endforeach()
