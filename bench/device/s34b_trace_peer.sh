#!/bin/bash
# Session 34, call 3: the 0.5B B1 and B8 steps traced (bench/trace_summary.py reads $R/trace_*.tsv), prefill, and the
# compiled PyTorch+PEFT peer at B1 and B8 in the same call. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry.
# Run: bash bench/device/s34b_trace_peer.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
make_models
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env b1 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 3 --trace $R/trace_b1.tsv
train_env b8 "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env pf "" --model /tmp/q05
tar czf $OUT/s34b.tar.gz -C $OUT r
compiled_peer 1
tar czf $OUT/s34b.tar.gz -C $OUT r
compiled_peer 8
tar czf $OUT/s34b.tar.gz -C $OUT r
