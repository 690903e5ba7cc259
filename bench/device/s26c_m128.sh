#!/bin/bash
# Session 26, device call 3 (H200): call 2's binary again, the 128×128 tile on 128 invocations
# (LORASTUDIO_CM2_THREADS=m:128) against its 256, alternated, with split-K as in session 25 throughout
# (LORASTUDIO_CM2_SPLIT_OR_S=0, the default this session lands): call 2 saw the B8 step 66.6 -> 62.0 ms with it but
# the 7B shape's 128×64-tile products slower in micro, which the switch does not touch.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s26c_m128.sh
source "$(dirname "$0")/common.sh"
S=LORASTUDIO_CM2_SPLIT_OR_S=0
M128=LORASTUDIO_CM2_THREADS=m:128
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1) &
micro_env base1 train16_ $S
micro_env m128_1 train16_ $S $M128
wait
for i in 1 2; do
  train_env b8_base$i "$S" --model /tmp/q05 --batch 8 --seq 512 --steps 5
  train_env b8_m128_$i "$S $M128" --model /tmp/q05 --batch 8 --seq 512 --steps 5
done
micro_env base2 train16_ $S
micro_env m128_2 train16_ $S $M128
tar czf $OUT/s26c.tar.gz -C $OUT r && rm -rf $R
