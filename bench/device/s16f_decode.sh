#!/bin/bash
# Session 16, device call 6 (named nvidia-h100-x1): the nf4 decode kernel with independent partial sums and a byte's
# two values from one lookup in a table of 256 pairs (default), against two lookups a byte
# (LORASTUDIO_QMATVEC_PAIRS=0) and the one-word kernel (LORASTUDIO_QMATVEC=1), in one binary: quant_op_test, then
# 0.5B and 7B nf4 decode. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s16f_decode.sh
source "$(dirname "$0")/common.sh"
link_source_dir
export LS_TEST_NO_VALIDATION=1
cd .gpu/carry/peers
(timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$?" >> $R/make_model7.txt) &
MK=$!
timeout 120 $B/quant_op_test > $R/quant_op_test.txt 2>&1; echo "quant_op_test rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/quant_op_test.txt | head -5
LORASTUDIO_QMATVEC_PAIRS=0 timeout 120 $B/quant_op_test --gtest_filter='*Matvec*:*FewAndMany*' > $R/quant_op_test_nopairs.txt 2>&1
echo "quant_op_test (two lookups) rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/quant_op_test_nopairs.txt | head -3
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
inf() {  # name, model, env
  local left=$((585 - SECONDS)); [ $left -gt 30 ] || { echo "skip $1: ${left}s left"; return; }
  env $3 timeout $((left < 110 ? left : 110)) $B/lorastudio-bench inference --model $2 --quantize nf4 > $R/infer_$1.txt 2>&1
  echo "inference $1 rc=$? at ${SECONDS}s"; grep -E "decode|qmatvec" $R/infer_$1.txt | head -4
}
inf 05_pairs /tmp/q05 X=1
inf 05_twolookups /tmp/q05 LORASTUDIO_QMATVEC_PAIRS=0
inf 05_oneword /tmp/q05 LORASTUDIO_QMATVEC=1
wait $MK; tail -1 $R/make_model7.txt; echo "7B model at ${SECONDS}s"
inf 7_pairs /tmp/q7 X=1
inf 7_twolookups /tmp/q7 LORASTUDIO_QMATVEC_PAIRS=0
inf 7_oneword /tmp/q7 LORASTUDIO_QMATVEC=1
tar czf $OUT/s16f.tar.gz -C $OUT r && rm -rf $R
