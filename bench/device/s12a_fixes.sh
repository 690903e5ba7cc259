#!/bin/bash
# Session 12, device call 1 (named nvidia-h100-x1): the flash kernels' bank-conflict-free score reads, the rank-r
# (skinny) products with the short side as a specialization constant, and the 16-byte quantized matvec: checked
# on the GPU (matmul_test, attention_test, training_test, quant_op_test, quantized_model_test) and timed: 0.5B B1
# and B8, 7B B1 with the bf16 base and nf4, 7B nf4 decode, each with the profile. No peers in this call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s12a_fixes.sh
cd "$(dirname "$0")/../.."
source .gpu/env.sh
export LS_TEST_NO_VALIDATION=1
R=$OUT/r; mkdir -p $R
W=/tmp/w; mkdir -p $W
tar xJf .gpu/carry/bins.tar.xz -C $W
B=$W/bin
T=$PWD/.gpu/carry/tok
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
for t in attention_test matmul_test quant_op_test quantized_model_test training_test; do
  timeout 100 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
cd .gpu/carry/peers
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
for b in 1 8; do
  timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b$b.txt 2>&1
  echo "train 0.5B B$b rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b$b.txt
done
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/infer05.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/infer05.txt
timeout 150 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$? at ${SECONDS}s"
for q in none nf4; do
  timeout 100 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize $q > $R/train7_$q.txt 2>&1
  echo "train 7B $q rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7_$q.txt
done
timeout 90 $B/lorastudio-bench inference --model /tmp/q7 --quantize nf4 > $R/infer7_nf4.txt 2>&1
echo "inference 7B nf4 rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/infer7_nf4.txt
tar czf $OUT/s12a.tar.gz -C $OUT r && rm -rf $R
