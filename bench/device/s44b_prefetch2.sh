#!/bin/bash
# (The prefetch these calls measured did not pay and was removed after them; its code is in commits 01024cd and 90b2899.)
# Session 44, call 2: the cache prefetch with one batch of loads a thread (call 1's four batches read 7B's o at ~1 TB/s
# and gained nothing), beside the attention or (LORASTUDIO_PREFETCH_WITH_QKV=1) beside the q/k/v pass, against none,
# alternated; 7B bf16 and nf4 decode. prefetch_test under the validation layer without the cooperative-matrix-2
# kernels (call 1 ran it with them, where Debian 12's layer reports only their device features).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s44b_prefetch2.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
link_source_dir
LORASTUDIO_NO_COOPMAT2=1 gpu_tests prefetch_test
LORASTUDIO_DECODE_PREFETCH=40 LORASTUDIO_PREFETCH_WITH_QKV=1 LORASTUDIO_NO_COOPMAT2=1 gpu_tests generator_golden_test
wait $MK; echo "model at ${SECONDS}s"
export LS_TEST_NO_VALIDATION=1
KERNELS="prefetch attention_split_partial_f16 matvec_norm_qkv_f16_f16 matvec8_f16_f16_f32"
i=0
for e in "" LORASTUDIO_DECODE_PREFETCH=25 "LORASTUDIO_DECODE_PREFETCH=25 LORASTUDIO_PREFETCH_WITH_QKV=1" "" \
         LORASTUDIO_DECODE_PREFETCH=25 "LORASTUDIO_DECODE_PREFETCH=25 LORASTUDIO_PREFETCH_WITH_QKV=1" \
         "LORASTUDIO_DECODE_PREFETCH=40 LORASTUDIO_PREFETCH_WITH_QKV=1" ""; do
  i=$((i + 1)); echo "bf16 run $i: ${e:-default}"
  decode_env d7_$i $B/lorastudio-bench "$e" --model /tmp/q7
done
KERNELS="prefetch qmatvec8_nf4_f16_f16_f32"
i=0
for e in "" LORASTUDIO_DECODE_PREFETCH=8 "LORASTUDIO_DECODE_PREFETCH=8 LORASTUDIO_PREFETCH_WITH_QKV=1" ""; do
  i=$((i + 1)); echo "nf4 run $i: ${e:-default}"
  decode_env d7nf4_$i $B/lorastudio-bench "$e" --model /tmp/q7 --quantize nf4
done
tar czf $OUT/s44b.tar.gz -C $OUT r
