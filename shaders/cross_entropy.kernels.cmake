# Cross-entropy over logits [N, V] with i32 targets (negative or >= V: ignored), and row argmax.
# T: storage type of logits / x; D: storage type of dlogits (f32, or T). Compute in f32.
ls_kernel(cross_entropy_reduce cross_entropy_reduce.comp)
# The f16-only rows (V8) read eight values a thread where a row's length allows (common/f16x8.glsl).
foreach(t f32 f16 bf16)
  set(v8 "")
  if(t STREQUAL "f16")
    set(v8 V8)
  endif()
  ls_kernel(cross_entropy_forward_${t} cross_entropy_forward.comp T=${t} ${v8})
  ls_kernel(cross_entropy_backward_${t}_f32 cross_entropy_backward.comp T=${t} D=f32)
  if(NOT t STREQUAL "f32")
    ls_kernel(cross_entropy_backward_${t}_${t} cross_entropy_backward.comp T=${t} D=${t} ${v8})
  endif()
  ls_kernel(argmax_${t} argmax.comp T=${t})
endforeach()
