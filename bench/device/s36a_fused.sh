#!/bin/bash
# Session 36, call 1: session 35's two opt-in paths (q's, k's and v's dx as one product, LORASTUDIO_QKV_FUSED=1;
# split-K summed in the GEMM, LORASTUDIO_CM2_FIXUP=1, =2 without `coherent`) and this session's defaults (the down
# layer's last add in the next layer's input norm or the down product, LORASTUDIO_ADD_INTO_NORM=0 and
# LORASTUDIO_DOWN_ADDS=0 keep the add pass; split sums added up by the norms, LORASTUDIO_SPLIT_INTO_NORM=0 keeps the
# reduces; "base" has all three off), same binary: GPU tests, micro, the
# 0.5B B1 step alternated, B8, prefill (its adds in the norms too: "base" keeps the products'), a B1 trace, the 7B
# B1 step.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s36a_fused.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests matmul_test convert_test norms_test training_test
LORASTUDIO_QKV_FUSED=1 gpu_tests training_test
LORASTUDIO_CM2_FIXUP=1 gpu_tests matmul_test training_test
tar czf $OUT/s36a.tar.gz -C $OUT r
micro_env fix train16_512x896x LORASTUDIO_CM2_FIXUP=1; micro_env nofix train16_512x896x; micro_env plain train16_512x896x LORASTUDIO_CM2_FIXUP=2
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
BASE="LORASTUDIO_DOWN_ADDS=0 LORASTUDIO_SPLIT_INTO_NORM=0 LORASTUDIO_ADD_INTO_NORM=0"
QKV=LORASTUDIO_QKV_FUSED=1
NOSPLIT=LORASTUDIO_SPLIT_INTO_NORM=0
NOADD="LORASTUDIO_DOWN_ADDS=0 LORASTUDIO_ADD_INTO_NORM=0"
for i in 1 2; do
  train_env b1_new$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_base$i "$BASE" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_qkv$i $QKV --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_nosplit$i $NOSPLIT --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_noadd$i "$NOADD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
tar czf $OUT/s36a.tar.gz -C $OUT r
train_env b1_fix "LORASTUDIO_CM2_FIXUP=1" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_plain "LORASTUDIO_CM2_FIXUP=2" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_new "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_base "$BASE" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_qkv $QKV --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env pf "" --model /tmp/q05
prefill_env pf_base "$BASE" --model /tmp/q05
prefill_env pf2 "" --model /tmp/q05
prefill_env pf_base2 "$BASE" --model /tmp/q05
train_env b1_trace "" --model /tmp/q05 --batch 1 --seq 512 --steps 3 --trace $R/trace_b1.tsv
tar czf $OUT/s36a.tar.gz -C $OUT r
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_base "$BASE" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_qkv $QKV --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s36a.tar.gz -C $OUT r
gpu_tests arch_golden_test generator_golden_test quantized_model_test memory_plan_test recorder_test
tar czf $OUT/s36a.tar.gz -C $OUT r
