#!/bin/bash
# Session 29's unrun device call (the budget ran out): K slices chosen by waves (ops/matmul.cpp split_by_waves:
# slices of at least 1,024, as many as fill the most of the last wave), the default for reductions past 4,864
# (the lm_head's dx) since commit "Split-K by waves", against session 28's rule (LORASTUDIO_CM2_SPLIT_RULE=0) and
# waves for every split product (=1), one binary, alternated: GPU tests, micro's 0.5B B1 products and the lm_head
# chunk, the steps at 0.5B B1 and B8 and 7B B1, prefill.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s29b_split_waves.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests training_test matmul_test
for r in default 0 1; do
  micro_env rule$r train16_512x LORASTUDIO_CM2_SPLIT_RULE=$r
  micro_env lm_rule$r train16_lmhead LORASTUDIO_CM2_SPLIT_RULE=$r
done
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
for i in 1 2; do
  for r in default 0 1; do
    train_env b1_rule$r.$i LORASTUDIO_CM2_SPLIT_RULE=$r --model /tmp/q05 --batch 1 --seq 512 --steps 9
    train_env b8_rule$r.$i LORASTUDIO_CM2_SPLIT_RULE=$r --model /tmp/q05 --batch 8 --seq 512 --steps 5
    prefill_env pf_rule$r.$i LORASTUDIO_CM2_SPLIT_RULE=$r --model /tmp/q05
  done
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for r in default 0 1 default; do
  train_env 7b_rule$r LORASTUDIO_CM2_SPLIT_RULE=$r --model /tmp/q7 --batch 1 --seq 512 --steps 5
done
tar czf $OUT/s29b.tar.gz -C $OUT r && rm -rf $R
