#!/bin/bash
# Session 35, call 1: q's, k's and v's dx as one product (model/layer.cpp qkv_backward_fused,
# LORASTUDIO_QKV_FUSED=1; three by default) and split products whose slices add up their own partial sums (FIXUP in
# shaders/matmul_coopmat2.comp; LORASTUDIO_CM2_FIXUP=1, =2 without `coherent`; off by default), same binary: GPU
# tests, micro, the 0.5B B1 and B8 steps alternated, prefill, a B1 trace, the 7B B1 step. Carry .gpu/env.sh,
# .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s35a_fixup.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests matmul_test convert_test training_test
LORASTUDIO_QKV_FUSED=1 gpu_tests training_test
LORASTUDIO_CM2_FIXUP=1 gpu_tests matmul_test training_test
tar czf $OUT/s35a.tar.gz -C $OUT r
micro_env fix train16_512x896x LORASTUDIO_CM2_FIXUP=1; micro_env nofix train16_512x896x; micro_env plain train16_512x896x LORASTUDIO_CM2_FIXUP=2
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
OLD=LORASTUDIO_QKV_FUSED=0
QKV=LORASTUDIO_QKV_FUSED=1
FIX="LORASTUDIO_CM2_FIXUP=1 $QKV"
for i in 1 2; do
  train_env b1_qkv$i $QKV --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_old$i $OLD --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
tar czf $OUT/s35a.tar.gz -C $OUT r
train_env b1_fix "$FIX" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_plain "LORASTUDIO_CM2_FIXUP=2 $QKV" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_qkv $QKV --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_old $OLD --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_fix "$FIX" --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env pf "" --model /tmp/q05
train_env b1_trace $QKV --model /tmp/q05 --batch 1 --seq 512 --steps 3 --trace $R/trace_b1.tsv
tar czf $OUT/s35a.tar.gz -C $OUT r
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_qkv $QKV --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_old $OLD --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s35a.tar.gz -C $OUT r
gpu_tests arch_golden_test quantized_model_test memory_plan_test recorder_test
tar czf $OUT/s35a.tar.gz -C $OUT r
