#!/bin/bash
# Session 11, device call 1: where we stand before this session's changes, and issue 23's rows.
# 1. quant_op_test and quantized_model_test on the H100 (the f16 scratch weight on tensor cores);
# 2. the 0.5B shape: training B1 and B8 (T512) with the profile's costliest kernels, and inference;
# 3. the 7B shape (make_model.py --shape 7b): training B1×T512 and inference with the bf16 base, nf4 (also with
#    --grad-checkpoint) and q8, each with tok/s and the device memory held.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry (bins.tar.xz, peers/, tok/).
# Run: bash bench/device/s11a_baseline.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
for t in quant_op_test quantized_model_test; do
  timeout 60 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; tail -1 $R/$t.txt
done
cd .gpu/carry/peers
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
for b in 1 8; do
  timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b$b.txt 2>&1
  echo "train 0.5B B$b rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b$b.txt
done
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/inference05.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference05.txt | head -3
timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$? at ${SECONDS}s"
run7() {  # name, extra options
  local left=$((575 - SECONDS)); [ $left -gt 40 ] || { echo "skip $1: ${left}s left"; return; }
  timeout $((left < 120 ? left : 120)) $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 "${@:2}" > $R/train7_$1.txt 2>&1
  echo "train 7B $1 rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7_$1.txt
}
inf7() {
  local left=$((575 - SECONDS)); [ $left -gt 40 ] || { echo "skip inference $1: ${left}s left"; return; }
  timeout $((left < 90 ? left : 90)) $B/lorastudio-bench inference --model /tmp/q7 --quantize $1 > $R/inference7_$1.txt 2>&1
  echo "inference 7B $1 rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference7_$1.txt | head -3
}
run7 none; run7 nf4 --quantize nf4; run7 nf4_ckpt --quantize nf4 --grad-checkpoint; inf7 nf4; inf7 none
run7 q8 --quantize q8; inf7 q8
tar czf $OUT/s11a.tar.gz -C $OUT r && rm -rf $R
