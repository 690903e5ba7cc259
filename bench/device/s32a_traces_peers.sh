#!/bin/bash
# Session 32, call 1: session 30's last two commits (1e9e127 waves above 512 rows, f59c3c4 reduce bindings) on a GPU
# at last, in the build at d22dc3c (no A/B build this time: against session 30's H100 rows), GPU tests; 0.5B B8 and
# B1 steps twice, prefill, 7B B1 and prefill; --trace files of the B8, B1 and 7B steps for bench/trace_summary.py;
# the compiled PyTorch+PEFT peer at 0.5B B1 and B8 in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s32a_traces_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
link_source_dir
make_models
gpu_tests training_test matmul_test recorder_test quant_op_test
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env warm "" --model /tmp/q05 --batch 8 --seq 512 --steps 2
for i in 1 2; do
  train_env b8.$i "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
  train_env b1.$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
prefill_env pf "" --model /tmp/q05
train_env b8_trace "" --model /tmp/q05 --batch 8 --seq 512 --steps 3 --trace $R/trace_b8.tsv
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 5 --trace $R/trace_b1.tsv
for b in 1 8; do
  (cd $P && timeout 200 python3 torch_peft_bench.py --model /tmp/q05 --batch $b --compile reduce-overhead --skip-micro \
    > $R/peer05_b${b}_compiled.txt 2>&1; echo "peer05 B$b compiled rc=$? at ${SECONDS}s")
  grep -E '"(train_ms_per_step|train_tokens_per_s|train_peak_gib|prefill512_tokens_per_s)"' $R/peer05_b${b}_compiled.txt | paste -sd' '
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
prefill_env pf7 "" --model /tmp/q7
train_env 7b_trace "" --model /tmp/q7 --batch 1 --seq 512 --steps 3 --trace $R/trace_7b.tsv
tar czf $OUT/s32a.tar.gz -C $OUT r && rm -rf $R
