# Dropout (LoRA dropout): y = x · keep / (1 − p) and its backward dx (+)= dy · keep / (1 − p), the mask
# from Philox4x32-10 of (seed, stream, element index). T: storage type of x, y (compute in f32).
foreach(t f32 f16 bf16)
  ls_kernel(dropout_forward_${t} dropout.comp T=${t})
  ls_kernel(dropout_backward_${t} dropout.comp BACKWARD T=${t})
endforeach()
