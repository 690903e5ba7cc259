#!/bin/bash
# Session 43, call 4 (ready; the device time was spent before it could start): quantized_model_test under the
# validation layer with the cooperative-matrix-2 kernels on, to see the maintenance4 fix (no
# VUID-RuntimeSpirv-LocalSizeId-06434 left; the old layer's messages about those kernels remain), then 7B nf4 decode
# with the packed gate/up product's new default (8 workgroups an SM) against LORASTUDIO_QMATVEC_WAVES=0 (one a column
# group, the old default), alternated.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s43d_waves.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
link_source_dir
gpu_tests quantized_model_test
grep -ohE "VUID-[A-Za-z0-9_-]+" $R/quantized_model_test.txt | sort | uniq -c
wait $MK; echo "model at ${SECONDS}s"
KERNELS="qmatvec_norm_silu_nf4_f16_f16"
decode_env d7nf4_waves0_1 $B/lorastudio-bench "LORASTUDIO_QMATVEC_WAVES=0" --model /tmp/q7 --quantize nf4
decode_env d7nf4_default_1 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
decode_env d7nf4_waves0_2 $B/lorastudio-bench "LORASTUDIO_QMATVEC_WAVES=0" --model /tmp/q7 --quantize nf4
decode_env d7nf4_default_2 $B/lorastudio-bench "" --model /tmp/q7 --quantize nf4
tar czf $OUT/s43d.tar.gz -C $OUT r
