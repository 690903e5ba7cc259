# The optimizer step over f32 tensors: AdamW update, global gradient norm (partial sums of squares, then
# one final sum), the clip factor, and zeroing of gradient accumulators (32- or 16-bit words).
ls_kernel(adamw_step optimizer.comp ADAMW)
ls_kernel(grad_sumsq_partial optimizer.comp SUMSQ_PARTIAL)
ls_kernel(grad_sumsq_final optimizer.comp SUMSQ_FINAL)
ls_kernel(clip_scale optimizer.comp CLIP_SCALE)
ls_kernel(fill_zero_u32 optimizer.comp FILL_ZERO)
ls_kernel(fill_zero_u16 optimizer.comp FILL_ZERO WORD16)
