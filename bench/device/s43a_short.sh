#!/bin/bash
# Session 43's first call: bench/device/s42c_short.sh (device_test and decode_layer_test with the validation layer on;
# 7B nf4 decode, the previous build 51c0aaf against this one with the packed q/k/v pass, and under the packed
# products' switches), then the 7B bf16 decode old against new (matvec_norm_qkv.comp, which the bf16 base's q/k/v
# pass also runs, changed with the packed pass), then matvec_norm_test and quantized_model_test with validation.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s43a_short.sh
bash "$(dirname "$0")/s42c_short.sh"
source "$(dirname "$0")/common.sh"
unpack_old_bench
export LS_TEST_NO_VALIDATION=1
KERNELS="matvec_norm_qkv_f16_f16 matvec_norm_silu_f16_f16 matvec8_f16_f16_f32 attention_split_partial"
decode_env d7_new_1 $B/lorastudio-bench "" --model /tmp/q7
decode_env d7_old_1 $W/old/lorastudio-bench "" --model /tmp/q7
decode_env d7_new_2 $B/lorastudio-bench "" --model /tmp/q7
unset LS_TEST_NO_VALIDATION
gpu_tests matvec_norm_test quantized_model_test
tar czf $OUT/s43a.tar.gz -C $OUT r
