# Row norms over x viewed as [rows, C] (C = last dim), one workgroup per row; compute in f32.
# Forward: X_T = storage type of x and y (f32, f16), W_T = of the weight (and bias) as loaded (f32, f16,
# bf16). Backward: dy, x, dx are f32; W_T as above; the weight gradients (f32) come from a second,
# column-parallel kernel that sums over rows in a fixed order (deterministic, no float atomics).
foreach(x f32 f16)
  foreach(w f32 f16 bf16)
    ls_kernel(rms_norm_${x}_${w} rms_norm.comp X_T=${x} W_T=${w})
    ls_kernel(layer_norm_${x}_${w} layer_norm.comp X_T=${x} W_T=${w})
  endforeach()
endforeach()
# f32 x normalised into f16 y (the residual stream into tensor-core matmul inputs).
foreach(w f32 f16 bf16)
  ls_kernel(rms_norm_f32_to_f16_${w} rms_norm.comp X_T=f32 Y_T=f16 W_T=${w})
endforeach()
foreach(w f32 f16 bf16)
  ls_kernel(rms_norm_backward_f32_${w} rms_norm_backward.comp W_T=${w})
  ls_kernel(layer_norm_backward_f32_${w} layer_norm_backward.comp W_T=${w})
endforeach()
ls_kernel(rms_norm_backward_dw rms_norm_backward.comp GRAD_W)
ls_kernel(layer_norm_backward_dw_db layer_norm_backward.comp GRAD_W)
