#!/bin/bash
# Session 41, call 7: the session's final build (c7bb358 and the shared kv8.glsl) on the GPU: attention_test's
# cached (decode) cases and decode_layer_test first, decode at 0.5B and 7B, the 0.5B B1 and 7B B1 steps, then
# matvec_norm_test and training_test.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s41e_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
make_models
link_source_dir
timeout 100 $B/attention_test --gtest_filter='*Cached*' > $R/attention_test.txt 2>&1
echo "attention_test (cached: the decode kernels) rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/attention_test.txt | head -6
gpu_tests decode_layer_test
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
KERNELS="matvec8_f16_f16_f32 matvec_norm_silu_f16_f16 matvec_norm_qkv_f16_f16 attention_split_partial"
for i in 1 2; do decode_env d05_$i $B/lorastudio-bench "" --model /tmp/q05; done
train_env b1_warm "" --model /tmp/q05 --batch 1 --seq 512 --steps 3
for i in 1 2; do train_env b1_$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9; done
wait $MK
for i in 1 2; do decode_env d7_$i $B/lorastudio-bench "" --model /tmp/q7; done
train_env b7 "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
gpu_tests matvec_norm_test training_test
tar czf $OUT/s41e.tar.gz -C $OUT r
