#!/bin/bash
# Session 16, device call 2 (named nvidia-h100-x1): issue 23's decode, the 16-byte quantized matrix-vector kernel
# (shaders/quant_matvec16.comp) against the one-word kernel (LORASTUDIO_QMATVEC=1) in one binary.
# 1. quant_op_test (both kernels, 1/2/4 outputs a subgroup), quantized_model_test, memory_plan_test;
# 2. 0.5B nf4 inference, new and old kernel; 3. 7B nf4 inference new/old, then q8 new, each with its profile.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s16b_qmatvec.sh
source "$(dirname "$0")/common.sh"
link_source_dir
export LS_TEST_NO_VALIDATION=1
cd .gpu/carry/peers
(timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in quant_op_test quantized_model_test memory_plan_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -5
done
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
inf() {  # name, model, env, extra options
  local left=$((585 - SECONDS)); [ $left -gt 30 ] || { echo "skip $1: ${left}s left"; return; }
  env $3 timeout $((left < 110 ? left : 110)) $B/lorastudio-bench inference --model $2 "${@:4}" > $R/infer_$1.txt 2>&1
  echo "inference $1 rc=$? at ${SECONDS}s"; grep -E "prefill|decode|qmatvec" $R/infer_$1.txt | head -6
}
inf 05_nf4_new /tmp/q05 X=1 --quantize nf4
inf 05_nf4_old /tmp/q05 LORASTUDIO_QMATVEC=1 --quantize nf4
inf 05_none /tmp/q05 X=1
wait $MK; tail -1 $R/make_model7.txt; echo "7B model at ${SECONDS}s"
inf 7_nf4_new /tmp/q7 X=1 --quantize nf4
inf 7_nf4_old /tmp/q7 LORASTUDIO_QMATVEC=1 --quantize nf4
inf 7_q8_new /tmp/q7 X=1 --quantize q8
inf 7_none /tmp/q7 X=1
tar czf $OUT/s16b.tar.gz -C $OUT r && rm -rf $R
