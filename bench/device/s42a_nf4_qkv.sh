#!/bin/bash
# Session 42, call 1: device_test and decode_layer_test with the validation layer on (session 41's review fix of
# vk::Pipelines::registers, never run on a GPU); the packed q/k/v pass (c9c5264) beside the previous build (51c0aaf)
# on 7B nf4 decode, and the packed products' measurement switches: LORASTUDIO_QMATVEC_WAVES (workgroups an SM that
# loop over column groups), LORASTUDIO_QMATVEC_PIECES (their pieces a lane), LORASTUDIO_QKV_DEPTH (the q/k/v pass's),
# LORASTUDIO_QMATVEC8_GROUPS (o's and down's workgroups asked for).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s42a_nf4_qkv.sh
source "$(dirname "$0")/common.sh"
make_models
link_source_dir
unpack_old_bench
gpu_tests device_test decode_layer_test
grep -iE "validation|VUID|registers|fell back|workgroups an SM" $R/device_test.txt $R/decode_layer_test.txt | head -20
wait $MK
KERNELS="qmatvec_norm_qkv_nf4_f16_f16 qmatvec_norm_nf4_f16_f16 rope_kv qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 attention_split_partial"
export LS_TEST_NO_VALIDATION=1
decode_env d7nf4_old_1 $W/old/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_new_1 $B/lorastudio-bench "LORASTUDIO_PIPELINE_STATS=1" --model /tmp/q7 --quantize nf4
grep -E "pipeline stats: (qmatvec|matvec)" $R/d7nf4_new_1.txt | sed 's/Register Count/regs/' | cut -c1-150 | head -12
k=0
for e in LORASTUDIO_QMATVEC_WAVES=4,LORASTUDIO_QMATVEC_PIECES=4 \
         LORASTUDIO_QMATVEC_WAVES=4,LORASTUDIO_QMATVEC_PIECES=4,LORASTUDIO_QMATVEC8_GROUPS=528 \
         LORASTUDIO_QMATVEC8_GROUPS=528 LORASTUDIO_QMATVEC_WAVES=4 LORASTUDIO_QKV_DEPTH=8 LORASTUDIO_QMATVEC8_GROUPS=1056; do
  k=$((k + 1)); echo "knob k$k: $e"
  decode_env d7nf4_k$k $B/lorastudio-bench "${e//,/ }" --model /tmp/q7 --quantize nf4
done
decode_env d7nf4_old_2 $W/old/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_new_2 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
tar czf $OUT/s42a.tar.gz -C $OUT r
