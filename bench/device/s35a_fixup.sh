#!/bin/bash
# Session 35, call 1: split products whose slices add up their own partial sums (FIXUP in
# shaders/matmul_coopmat2.comp; LORASTUDIO_CM2_FIXUP=1, =2 without `coherent`; off by default) and q's, k's and v's dx
# as one product (model/layer.cpp qkv_backward_fused; LORASTUDIO_QKV_FUSED=0 keeps three), same binary: GPU tests, micro,
# the 0.5B B1 and B8 steps alternated, prefill, a B1 trace, the 7B B1 step. Carry .gpu/env.sh, .gpu/debs,
# .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s35a_fixup.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests matmul_test recorder_test convert_test quant_op_test training_test memory_plan_test
LORASTUDIO_CM2_FIXUP=1 gpu_tests matmul_test quant_op_test training_test
mv $R/matmul_test.txt $R/matmul_test_fixup.txt
tar czf $OUT/s35a.tar.gz -C $OUT r
micro_env fix train16_5 LORASTUDIO_CM2_FIXUP=1; micro_env nofix train16_5; micro_env plain train16_5 LORASTUDIO_CM2_FIXUP=2
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
OLD=LORASTUDIO_QKV_FUSED=0
NEW=LORASTUDIO_CM2_FIXUP=1
for i in 1 2; do
  train_env b1_new$i $NEW --model /tmp/q05 --batch 1 --seq 512 --steps 9
  train_env b1_old$i "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
train_env b1_fixonly "$NEW $OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_qkvonly "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_plain LORASTUDIO_CM2_FIXUP=2 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_new $NEW --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_old "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_qkv "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env pf_new $NEW --model /tmp/q05
prefill_env pf_old "" --model /tmp/q05
train_env b1_trace $NEW --model /tmp/q05 --batch 1 --seq 512 --steps 3 --trace $R/trace_b1.tsv
tar czf $OUT/s35a.tar.gz -C $OUT r
gpu_tests quantized_model_test arch_golden_test
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_new $NEW --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_old "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s35a.tar.gz -C $OUT r
