#!/bin/bash
# Session 40, call 2: the few-row products' loads in flight a lane (LORASTUDIO_MATVEC_DEPTH, 1-4: shaders/matvec8.comp,
# the o and down products and the lm head; matvec_norm.comp, gate/up with its norm; matvec_norm_qkv.comp; the same sums in the
# same order): micro's decode products at each depth, then 0.5B and 7B decode at depth 1 and the best two, alternated;
# matvec_norm_test (which checks the bits at every depth) on the GPU.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s40b_matvec_depth.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
timeout 120 $B/matvec_norm_test > $R/matvec_norm_test.txt 2>&1
echo "matvec_norm_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/matvec_norm_test.txt | head -6
for d in 1 2 4; do
  env LORASTUDIO_MATVEC_DEPTH=$d timeout 90 $B/lorastudio-bench micro --filter b_f16_ --iters 50 > $R/micro_d$d.txt 2>&1
  echo "micro depth $d rc=$? at ${SECONDS}s"; grep -E "^decode_" $R/micro_d$d.txt | cut -c1-33,78-112
done
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
KERNELS="matvec8_f16_f16_f32 matvec_norm_silu_f16_f16 matvec_norm_qkv_f16_f16"
for i in 1 2; do
  for d in 1 2 4; do decode_env d05_d${d}_$i $B/lorastudio-bench "LORASTUDIO_MATVEC_DEPTH=$d" --model /tmp/q05; done
done
# the persistent layer at two workgroups an SM, taken only where its registers fit (2x2x2: 120, taken; 2x4x2: ~200,
# run at one: its note on stderr)
KERNELS="decode_layer"
decode_env d05_p2 $B/lorastudio-bench "LORASTUDIO_DECODE_PERSISTENT=2" --model /tmp/q05
decode_env d05_p2_2x4x2 $B/lorastudio-bench "LORASTUDIO_DECODE_PERSISTENT=2 LORASTUDIO_DECODE_DEPTH=4" --model /tmp/q05
grep PERSISTENT $R/d05_p2*.txt
KERNELS="matvec8_f16_f16_f32 matvec_norm_silu_f16_f16 matvec_norm_qkv_f16_f16"
wait $MK
for d in 1 2 4 1; do decode_env d7_d${d}_$SECONDS $B/lorastudio-bench "LORASTUDIO_MATVEC_DEPTH=$d" --model /tmp/q7; done
timeout 150 $B/decode_layer_test > $R/decode_layer_test.txt 2>&1
echo "decode_layer_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in|PERSISTENT" $R/decode_layer_test.txt | head -6
tar czf $OUT/s40b.tar.gz -C $OUT r
