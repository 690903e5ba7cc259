# Sampling a token on the GPU (engine/ops/sample.h): the maximum, the greedy pick, one radix-descent step
# per dispatch, and the draw (its partial sums, the draw itself, and the kept mask for the tests).
ls_kernel(sample_max sample_max.comp)
ls_kernel(sample_greedy sample_greedy.comp)
ls_kernel(sample_hist sample_hist.comp)
ls_kernel(sample_partials sample_draw.comp PARTIALS=1)
ls_kernel(sample_draw sample_draw.comp)
ls_kernel(sample_kept sample_draw.comp KEPT_MASK=1)
# Between decode steps recorded in one program (engine/ops/decode_advance.h): the sampled token as the next input.
ls_kernel(decode_advance decode_advance.comp)
