#!/bin/bash
# Session 32, call 1: session 30's last two commits (1e9e127 waves above 512 rows, f59c3c4 reduce bindings) on a GPU
# at last, in the build at d22dc3c (no A/B build this time: against session 30's H100 rows): GPU tests while the
# models are made (timing starts once both are written, so that making the 7B one does not share the GPU with it);
# 0.5B B8 and B1 steps twice, prefill, 7B B1 and prefill; --trace files of the B8, B1 and 7B steps for
# bench/trace_summary.py. (The compiled peer: s32b_khr_peers.sh, the next call.)
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s32a_traces_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests training_test matmul_test quant_op_test
wait $MK; tail -1 $R/make_model05.txt; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env warm "" --model /tmp/q05 --batch 8 --seq 512 --steps 2
for i in 1 2; do
  train_env b8.$i "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
  train_env b1.$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
prefill_env pf "" --model /tmp/q05
train_env b8_trace "" --model /tmp/q05 --batch 8 --seq 512 --steps 3 --trace $R/trace_b8.tsv
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 5 --trace $R/trace_b1.tsv
train_env 7b "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_trace "" --model /tmp/q7 --batch 1 --seq 512 --steps 3 --trace $R/trace_7b.tsv
prefill_env pf7 "" --model /tmp/q7
tar czf $OUT/s32a.tar.gz -C $OUT r && rm -rf $R
