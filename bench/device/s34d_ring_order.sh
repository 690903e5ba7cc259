#!/bin/bash
# Session 34, call 5: s34c's scheduled layer backward plus 2 MiB split-ring slots (LoRA's weight gradients off
# kScratchSplitK) and q's dx recorded after k's and v's; against LORASTUDIO_SCHEDULE=0, same binary, alternated.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s34d_ring_order.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests training_test recorder_test memory_plan_test
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
for i in 1 2; do
  train_env b1_sched$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_plain$i LORASTUDIO_SCHEDULE=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
train_env b8_sched "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_plain LORASTUDIO_SCHEDULE=0 --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b1_sched_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 3 --trace $R/trace_b1_sched.tsv
tar czf $OUT/s34d.tar.gz -C $OUT r
