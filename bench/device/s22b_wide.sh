#!/bin/bash
# Session 22, device call 2 (H200): the wide form of the packed norm-fused products (a lane on 32 consecutive values a
# step, one block scale and one 16-byte load of nf4 codes for them, x̂ staged with padding) against the pieces form
# (LORASTUDIO_QWIDE=0): micro decode cases, GPU tests, 7B nf4/q8 decode. Only the 7B model is made.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s22b_wide.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
(cd .gpu/carry/peers && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
gpu_tests matvec_norm_test quantized_model_test
for v in "1 1" "0 1" "1 2"; do
  set -- $v
  LORASTUDIO_QWIDE=$1 LORASTUDIO_QCOLS=$2 LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter decode > $R/micro_w$1_c$2.txt 2>&1
  echo "== wide $1 cols $2 rc=$? at ${SECONDS}s"
  grep -E '^decode_.*_(nf4|q8)' $R/micro_w$1_c$2.txt | awk '{printf "  %-24s %8s us\n", $1, $(NF-3)}'
  grep 'pipeline stats' $R/micro_w$1_c$2.txt | grep -E 'qmatvec_norm_silu_(nf4|q8)' | grep -oE 'Register Count=[0-9]+|Shared Memory Size=[0-9]+' | paste -sd' '
done
wait $MK; tail -1 $R/make_model7.txt; echo "model at ${SECONDS}s"
k() { grep -E "qmatvec|matvec_norm" $R/$1.txt | head -4; }
infer q7_nf4_wide $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64; k q7_nf4_wide
LORASTUDIO_QWIDE=0 infer q7_nf4_pieces $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64; k q7_nf4_pieces
infer q7_q8_wide $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64; k q7_q8_wide
LORASTUDIO_QWIDE=0 infer q7_q8_pieces $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64; k q7_q8_pieces
infer q7_nf4_wide2 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
tar czf $OUT/s22b.tar.gz -C $OUT r && rm -rf $R
