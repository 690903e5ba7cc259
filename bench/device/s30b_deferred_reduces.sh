#!/bin/bash
# Session 30, call 2: split products' reduces held back to the end of a vk::Recorder::DeferScope (q, k and v's
# forward; gate's and up's dx), so that their slices share a stage, against LORASTUDIO_DEFER_REDUCES=0 (recorded as
# they come, as before) in the same binary, alternated: GPU tests, 0.5B B1 and B8, prefill, 7B B1, a B1 trace; the
# lm_head forward at 256 rows by tile; the compiled PyTorch+PEFT peer at 0.5B B1 in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s30b_deferred_reduces.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
link_source_dir
make_models
gpu_tests recorder_test matmul_test training_test memory_plan_test
micro_env lm256_default train16_lmhead_256 X=1
for t in m t l; do micro_env lm256_$t train16_lmhead_256 LORASTUDIO_CM2_TILE=$t; done
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
for i in 1 2; do
  for e in X=1 LORASTUDIO_DEFER_REDUCES=0; do
    n=${e%%=*}; [ $n = X ] && n=defer || n=plain
    train_env b1_$n.$i $e --model /tmp/q05 --batch 1 --seq 512 --steps 9
    train_env b8_$n.$i $e --model /tmp/q05 --batch 8 --seq 512 --steps 5
    prefill_env pf_$n.$i $e --model /tmp/q05
  done
done
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
(cd $P && timeout 170 python3 torch_peft_bench.py --model /tmp/q05 --batch 1 --compile reduce-overhead --skip-micro \
  > $R/peer05_compiled.txt 2>&1; echo "peer05_compiled rc=$? at ${SECONDS}s")
grep -E '"(train_ms_per_step|train_tokens_per_s|train_peak_gib|prefill512_tokens_per_s)"' $R/peer05_compiled.txt | paste -sd' '
train_env b1_after_peer "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_defer "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_plain LORASTUDIO_DEFER_REDUCES=0 --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s30b.tar.gz -C $OUT r && rm -rf $R
