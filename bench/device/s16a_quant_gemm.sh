#!/bin/bash
# Session 16, device call 1 (named nvidia-h100-x1): issue 23, quantized weights read packed by the coopmat2 GEMM.
# 1. quant_op_test with the validation layer (the decode function's block pointers need bufferDeviceAddress),
#    quantized_model_test, matmul_test, memory_plan_test (the plan without the dequantized scratch) and training_test;
# 2. the 0.5B shape, nf4: training B1 with the packed kernel and with the scratch (LORASTUDIO_QUANT_IN_GEMM=0);
# 3. the 7B shape: training B1×T512 with the bf16 base, nf4 packed, nf4 scratch, nf4 packed + --grad-checkpoint,
#    q8 packed, each with tok/s and memory held; nf4 inference (the decode token's profile).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s16a_quant_gemm.sh
source "$(dirname "$0")/common.sh"
link_source_dir
cd .gpu/carry/peers
(timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$?" >> $R/make_model7.txt) &
MK=$!
timeout 90 $B/quant_op_test > $R/quant_op_test.txt 2>&1; echo "quant_op_test (validation on) rc=$? at ${SECONDS}s"
grep -E "packed|scratch|FAILED|PASSED|rror" $R/quant_op_test.txt | head -12
export LS_TEST_NO_VALIDATION=1
for t in quantized_model_test matmul_test memory_plan_test training_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -5
done
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
for v in packed scratch; do
  e=X=1; [ $v = scratch ] && e=LORASTUDIO_QUANT_IN_GEMM=0
  env $e timeout 60 $B/lorastudio-bench train --model /tmp/q05 --quantize nf4 --batch 1 --seq 512 --steps 5 > $R/train05_nf4_$v.txt 2>&1
  echo "train 0.5B nf4 $v rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|loss" $R/train05_nf4_$v.txt | head -4
done
wait $MK; tail -1 $R/make_model7.txt; echo "7B model at ${SECONDS}s"
run7() {  # name, env, extra options
  local left=$((580 - SECONDS)); [ $left -gt 40 ] || { echo "skip $1: ${left}s left"; return; }
  env $2 timeout $((left < 100 ? left : 100)) $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 "${@:3}" > $R/train7_$1.txt 2>&1
  echo "train 7B $1 rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|loss" $R/train7_$1.txt | head -4
}
run7 nf4_packed X=1 --quantize nf4
run7 nf4_scratch LORASTUDIO_QUANT_IN_GEMM=0 --quantize nf4
run7 bf16 X=1
run7 nf4_ckpt X=1 --quantize nf4 --grad-checkpoint
left=$((580 - SECONDS)); [ $left -gt 40 ] && {
  timeout $((left < 90 ? left : 90)) $B/lorastudio-bench inference --model /tmp/q7 --quantize nf4 > $R/infer7_nf4.txt 2>&1
  echo "inference 7B nf4 rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer7_nf4.txt | head -3; }
run7 q8_packed X=1 --quantize q8
tar czf $OUT/s16a.tar.gz -C $OUT r && rm -rf $R
