#!/bin/bash
# Session 43, call 2: the GPU tests with the validation layer on (found through VK_LAYER_PATH, common.sh, since
# session 43; every earlier device call ran them with LS_TEST_NO_VALIDATION=1 or failed to load the layer), then the
# 0.5B nf4 decode, the previous build (51c0aaf) against this one, alternated.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s43b_validation.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "models rc=$?" >> $R/make_model05.txt) &
MK=$!
link_source_dir
unpack_old_bench
gpu_tests device_test decode_layer_test matvec_norm_test quantized_model_test
grep -hiE "VUID|validation error" $R/*_test.txt | sort | uniq -c | head -10
wait $MK
export LS_TEST_NO_VALIDATION=1
KERNELS="qmatvec_norm_qkv_nf4_f16_f16 qmatvec_norm_nf4_f16_f16 qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 attention_split_partial"
for i in 1 2; do
  decode_env d05nf4_old_$i $W/old/lorastudio-bench "" --model /tmp/q05 --quantize nf4
  decode_env d05nf4_new_$i $B/lorastudio-bench "" --model /tmp/q05 --quantize nf4
done
tar czf $OUT/s43b.tar.gz -C $OUT r
