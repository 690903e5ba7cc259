#!/bin/bash
# Session 40, call 2: the few-row products' loads in flight a lane (LORASTUDIO_MATVEC_DEPTH, 1-4: shaders/matvec8.comp,
# the o and down products and the lm head; matvec_norm.comp, gate/up with its norm; matvec_norm_qkv.comp; the same sums
# in the same order): micro's f16 decode products at depths 1, 2 and 4, then 0.5B and 7B decode at each, alternated.
# Lean: the session's device time was nearly spent on refused starts.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s40b_matvec_depth.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
make_models
for d in 1 2 4; do
  env LORASTUDIO_MATVEC_DEPTH=$d timeout 60 $B/lorastudio-bench micro --filter b_f16_ --iters 50 > $R/micro_d$d.txt 2>&1
  echo "micro depth $d rc=$? at ${SECONDS}s"; grep -E "^decode_" $R/micro_d$d.txt | cut -c1-33,78-112
done
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
KERNELS="matvec8_f16_f16_f32 matvec_norm_silu_f16_f16 matvec_norm_qkv_f16_f16"
for d in 1 2 4 1; do decode_env d05_d${d}_$SECONDS $B/lorastudio-bench "LORASTUDIO_MATVEC_DEPTH=$d" --model /tmp/q05; done
wait $MK
for d in 1 4 2 1; do decode_env d7_d${d}_$SECONDS $B/lorastudio-bench "LORASTUDIO_MATVEC_DEPTH=$d" --model /tmp/q7; done
link_source_dir; gpu_tests decode_layer_test
tar czf $OUT/s40b.tar.gz -C $OUT r
