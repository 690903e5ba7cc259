# Row softmax y = softmax(scale * x) (optionally causal-masked) and its backward. T: storage type of
# x, y, dy, dx (compute in f32).
foreach(t f32 f16 bf16)
  ls_kernel(softmax_${t} softmax.comp T=${t})
  ls_kernel(softmax_backward_${t} softmax_backward.comp T=${t})
endforeach()
