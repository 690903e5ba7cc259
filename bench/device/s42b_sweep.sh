#!/bin/bash
# Session 42, call 2: more of the packed products' switches at 7B nf4 (LORASTUDIO_QMATVEC_WAVES 2 and 8,
# LORASTUDIO_QMATVEC_PIECES 4, LORASTUDIO_QKV_DEPTH 2), 0.5B nf4 old and new, the bf16 products' registers at
# LORASTUDIO_MATVEC_DEPTH 2, 3 and 4 (7B decode), then matvec_norm_test and quantized_model_test with validation.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s42b_sweep.sh
source "$(dirname "$0")/common.sh"
make_models
link_source_dir
unpack_old_bench
wait $MK
KERNELS="qmatvec_norm_qkv_nf4_f16_f16 qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 attention_split_partial"
export LS_TEST_NO_VALIDATION=1
k=0
for e in LORASTUDIO_QMATVEC_WAVES=8 LORASTUDIO_QMATVEC_WAVES=2 LORASTUDIO_QMATVEC_PIECES=4 LORASTUDIO_QKV_DEPTH=2 ""; do
  k=$((k + 1)); echo "knob k$k: $e"
  decode_env d7nf4_k$k $B/lorastudio-bench "$e" --model /tmp/q7 --quantize nf4
done
for i in 1 2; do
  decode_env d05nf4_old_$i $W/old/lorastudio-bench "" --model /tmp/q05 --quantize nf4
  decode_env d05nf4_new_$i $B/lorastudio-bench "" --model /tmp/q05 --quantize nf4
done
decode_env d05nf4_w4 $B/lorastudio-bench "LORASTUDIO_QMATVEC_WAVES=4" --model /tmp/q05 --quantize nf4
KERNELS="matvec_norm_qkv_f16_f16 matvec_norm_silu_f16_f16 matvec8_f16_f16_f32"
decode_env d7_new $B/lorastudio-bench "LORASTUDIO_PIPELINE_STATS=1" --model /tmp/q7
decode_env d7_depth3 $B/lorastudio-bench "LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_MATVEC_DEPTH=3" --model /tmp/q7
decode_env d7_depth4 $B/lorastudio-bench "LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_MATVEC_DEPTH=4" --model /tmp/q7
grep -hE "pipeline stats: matvec" $R/d7_new.txt $R/d7_depth3.txt $R/d7_depth4.txt | sed 's/Register Count/regs/' | cut -c1-150 | head -12
unset LS_TEST_NO_VALIDATION
gpu_tests matvec_norm_test quantized_model_test
tar czf $OUT/s42b.tar.gz -C $OUT r
