#!/bin/bash
# Session 26, device call 2 (H200): the final build. The 64×64 tile unsplit over split-K now only for short
# reductions (K <= 4864; call 1 put the lm head's dx on it too); OLD = LORASTUDIO_CM2_SPLIT_OR_S=0, the split as in
# session 25. And the 128×128 tile on 128 invocations (LORASTUDIO_CM2_THREADS=m:128, at the default unroll of 8;
# call 1 saw it help two of the 7B products at unroll 2). GPU tests under the default and, for the GEMM's own
# tests, under each switch; micro; steps, prefill and the 7B nf4 step under each, in one call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s26b_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
OLD=LORASTUDIO_CM2_SPLIT_OR_S=0
M128=LORASTUDIO_CM2_THREADS=m:128
gpu_tests matmul_test training_test quantized_model_test generator_golden_test attention_test
for e in $OLD $M128; do
  echo "== $e"
  for t in matmul_test quantized_model_test; do
    env $e timeout 120 $B/$t > $R/${t}_$e.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/${t}_$e.txt | head -4
  done
done
micro_env default train16_
micro_env old train16_ $OLD
micro_env m128 train16_ $M128
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env b1_old "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_old2 "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_old "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_new "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b1_m128 "$M128" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_m128 "$M128" --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env inf05_old "$OLD" --model /tmp/q05
prefill_env inf05_new "" --model /tmp/q05
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_old "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_m128 "$M128" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_nf4_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4
prefill_env inf7_new "" --model /tmp/q7
prefill_env inf7_m128 "$M128" --model /tmp/q7
tar czf $OUT/s26b.tar.gz -C $OUT r && rm -rf $R
