#!/bin/bash
# Session 41, call 5: the measurement switches that exist, swept where the profile says the time is.
#  - 0.5B B1 step: the flash forward's key splits (LORASTUDIO_FLASH_FORWARD_SPLITS 2, 4; 224 workgroups unsplit),
#    the backward's (LORASTUDIO_FLASH_SPLITS 2), the norms' threads (LORASTUDIO_NORM_THREADS 128, 64), alternated
#    with the defaults.
#  - decode: the few-row products' workgroups (LORASTUDIO_MATVEC_GROUPS, new: 264 by default; 528 and 1056 split the
#    7B q/k/v, o and down products' columns over 2 and 4 subgroups), 0.5B and 7B.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s41c_knob_sweep.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
make_models
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 3 > $R/warm.txt 2>&1
for e in "" LORASTUDIO_FLASH_FORWARD_SPLITS=2 LORASTUDIO_FLASH_FORWARD_SPLITS=4 LORASTUDIO_FLASH_SPLITS=2 \
         LORASTUDIO_NORM_THREADS=128 LORASTUDIO_NORM_THREADS=64 "" LORASTUDIO_FLASH_FORWARD_SPLITS=2 LORASTUDIO_FLASH_SPLITS=2; do
  env $e timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/t.txt 2>&1
  echo "b1 [$e] rc=$? $(grep -oE '[0-9.]+ ms/step' $R/t.txt) $(grep -oE 'loss [0-9.]+ -> [0-9.]+' $R/t.txt)"
done
KERNELS="matvec8_f16_f16_f32 matvec_norm_silu_f16_f16 matvec_norm_qkv_f16_f16 attention_split_partial"
for g in 264 528 1056 264; do decode_env d05_g${g}_$SECONDS $B/lorastudio-bench "LORASTUDIO_MATVEC_GROUPS=$g" --model /tmp/q05; done
wait $MK
for g in 264 528 1056 264; do decode_env d7_g${g}_$SECONDS $B/lorastudio-bench "LORASTUDIO_MATVEC_GROUPS=$g" --model /tmp/q7; done
tar czf $OUT/s41c.tar.gz -C $OUT r
