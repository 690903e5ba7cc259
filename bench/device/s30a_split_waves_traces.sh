#!/bin/bash
# Session 30, call 1: session 29's unrun s29b (K slices by waves for the long reductions, the default since d2e831d,
# against LORASTUDIO_CM2_SPLIT_RULE=0, session 28's rule, and =1, waves for every split product; GPU tests on the new
# slice counts, micro, 0.5B B1/B8, prefill, 7B B1) plus a --trace of one profiled step at 0.5B B1, B8 and 7B B1 with
# the default rule, to find what the step's critical path is now; the B1 lm_head chunk's dx by slices (up to 56) and tile.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s30a_split_waves_traces.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests training_test matmul_test
for r in default 0 1; do
  micro_env lm_rule$r train16_lmhead LORASTUDIO_CM2_SPLIT_RULE=$r
done
# The B1 step's lm_head chunk (256 rows; its dx on the 128×128 tile, 14 tiles, 9 slices by the rule) by slices and tile.
micro_env lm256_default train16_lmhead_256 X=1
for s in 16 18 28 37 56; do micro_env lm256_s$s train16_lmhead_256 LORASTUDIO_CM2_SPLITS=$s; done
for s in 9 18 37; do micro_env lm256_t_s$s train16_lmhead_256 LORASTUDIO_CM2_TILE=t LORASTUDIO_CM2_SPLITS=$s; done
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
for i in 1 2; do
  for r in default 0 1; do
    train_env b1_rule$r.$i LORASTUDIO_CM2_SPLIT_RULE=$r --model /tmp/q05 --batch 1 --seq 512 --steps 9
    train_env b8_rule$r.$i LORASTUDIO_CM2_SPLIT_RULE=$r --model /tmp/q05 --batch 8 --seq 512 --steps 5
  done
done
prefill_env pf_default "" --model /tmp/q05
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
train_env b8_trace "" --model /tmp/q05 --batch 8 --seq 512 --steps 5 --trace $R/trace_b8.tsv
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for r in default 0 default 0; do
  train_env 7b_rule$r LORASTUDIO_CM2_SPLIT_RULE=$r --model /tmp/q7 --batch 1 --seq 512 --steps 5
done
train_env 7b_trace "" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
tar czf $OUT/s30a.tar.gz -C $OUT r && rm -rf $R
