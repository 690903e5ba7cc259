#!/bin/bash
# (The prefetch these calls measured did not pay and was removed after them; its code is in commits 01024cd and 90b2899.)
# Session 44, call 1. (1) quantized_model_test under the validation layer with the cooperative-matrix-2 kernels on
# (session 43's maintenance4 fix: no VUID-RuntimeSpirv-LocalSizeId-06434 may be left; the old layer's other messages
# about those kernels are expected) and prefetch_test (new). (2) 7B bf16 decode: o's weight and the first rows of
# gate's and up's read into L2 beside each layer's attention (LORASTUDIO_DECODE_PREFETCH, MiB; new, off by default)
# against none, alternated; the q/k/v pass's split and depth (LORASTUDIO_QKV_SPLIT, LORASTUDIO_QKV_DEPTH, new).
# (3) session 43's repeat: 7B nf4 with the packed gate/up product at 8 workgroups an SM against one a column group.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s44a_prefetch.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
link_source_dir
gpu_tests quantized_model_test prefetch_test
grep -ohE "VUID-[A-Za-z0-9_-]+" $R/quantized_model_test.txt | sort | uniq -c
LORASTUDIO_DECODE_PREFETCH=40 LORASTUDIO_NO_COOPMAT2=1 gpu_tests generator_golden_test
wait $MK; echo "model at ${SECONDS}s"
export LS_TEST_NO_VALIDATION=1
KERNELS="attention_split_partial_f16 matvec_norm_qkv_f16_f16 matvec8_f16_f16_f32 matvec_norm_silu_f16_f16"
i=0
for e in "" LORASTUDIO_DECODE_PREFETCH=25 LORASTUDIO_DECODE_PREFETCH=40 "" LORASTUDIO_DECODE_PREFETCH=25 \
         LORASTUDIO_DECODE_PREFETCH=40 LORASTUDIO_QKV_SPLIT=2 LORASTUDIO_QKV_DEPTH=4; do
  i=$((i + 1)); echo "bf16 run $i: ${e:-default}"
  decode_env d7_$i $B/lorastudio-bench "$e" --model /tmp/q7
done
KERNELS="qmatvec_norm_silu_nf4_f16_f16"
decode_env d7nf4_waves0_1 $B/lorastudio-bench "LORASTUDIO_QMATVEC_WAVES=0" --model /tmp/q7 --quantize nf4
decode_env d7nf4_default_1 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_waves0_2 $B/lorastudio-bench "LORASTUDIO_QMATVEC_WAVES=0" --model /tmp/q7 --quantize nf4
decode_env d7nf4_default_2 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
tar czf $OUT/s44a.tar.gz -C $OUT r
