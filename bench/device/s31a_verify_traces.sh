#!/bin/bash
# Session 31, call 1: session 30's last commits on a GPU (kCm2WavesRows: waves for short reductions above 512 rows;
# a held-back reduce binding only its partial sums and epilogue operands) against da33f22 (.gpu/carry/old) in the same
# call: GPU tests, 0.5B B8 and B1 steps, prefill, 7B B1 and prefill; then traces of the B8, B1 and 7B steps to find
# where B8's and 7B's time goes (bench/trace_summary.py reads them).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s31a_verify_traces.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
make_models
gpu_tests training_test matmul_test recorder_test quant_op_test
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env warm "" --model /tmp/q05 --batch 8 --seq 512 --steps 2
for i in 1 2; do
  train_env b8_new.$i "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
  B=$W/old train_env b8_old.$i "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
  train_env b1_new.$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  B=$W/old train_env b1_old.$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
prefill_env pf_new "" --model /tmp/q05
train_env b8_trace "" --model /tmp/q05 --batch 8 --seq 512 --steps 3 --trace $R/trace_b8.tsv
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 5 --trace $R/trace_b1.tsv
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
B=$W/old train_env 7b_old "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
prefill_env pf7_new "" --model /tmp/q7
train_env 7b_trace "" --model /tmp/q7 --batch 1 --seq 512 --steps 3 --trace $R/trace_7b.tsv
tar czf $OUT/s31a.tar.gz -C $OUT r && rm -rf $R
