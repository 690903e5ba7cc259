#!/bin/bash
# Session 42, the one call the device budget allowed (s42a's essentials, after eight refused starts): device_test
# and decode_layer_test with the validation layer on (session 41's review fix), then 7B nf4 decode: the previous
# build (51c0aaf) and this one (the packed q/k/v pass) alternated, and this one under the packed products' switches
# LORASTUDIO_QMATVEC_WAVES=4 with LORASTUDIO_QMATVEC_PIECES=4, and with LORASTUDIO_QMATVEC8_GROUPS=528 too.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s42c_short.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
link_source_dir
unpack_old_bench
gpu_tests device_test decode_layer_test
grep -iE "VUID|validation error|fell back" $R/device_test.txt $R/decode_layer_test.txt | head -10
wait $MK; echo "model at ${SECONDS}s"
KERNELS="qmatvec_norm_qkv_nf4_f16_f16 qmatvec_norm_nf4_f16_f16 rope_kv qmatvec_norm_silu_nf4_f16_f16 qmatvec8_nf4_f16_f16_f32 attention_split_partial"
export LS_TEST_NO_VALIDATION=1
decode_env d7nf4_old_1 $W/old/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_new_1 $B/lorastudio-bench "LORASTUDIO_PIPELINE_STATS=1" --model /tmp/q7 --quantize nf4
decode_env d7nf4_w4p4 $B/lorastudio-bench "LORASTUDIO_QMATVEC_WAVES=4 LORASTUDIO_QMATVEC_PIECES=4" --model /tmp/q7 --quantize nf4
decode_env d7nf4_w4p4g $B/lorastudio-bench "LORASTUDIO_QMATVEC_WAVES=4 LORASTUDIO_QMATVEC_PIECES=4 LORASTUDIO_QMATVEC8_GROUPS=528" --model /tmp/q7 --quantize nf4
decode_env d7nf4_new_2 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_old_2 $W/old/lorastudio-bench "" --model /tmp/q7 --quantize nf4
grep -E "pipeline stats: (qmatvec|matvec)" $R/d7nf4_new_1.txt | sed 's/Register Count/regs/' | cut -c1-140 | head -8
