#!/bin/bash
# Session 12, device call 1 (named nvidia-h100-x1): the flash kernels' bank-conflict-free score reads, the rank-r
# (skinny) products with the short side as a specialization constant, the short-K kernel and the 16-byte
# quantized matvec: checked on the GPU (attention_test, matmul_test, quant_op_test, quantized_model_test,
# training_test) and timed beside the previous build (session 11's final binary, .gpu/carry/old) in the same
# call: the attention micro cases, 0.5B B1, 7B B1; then 0.5B B8, split-K up to one wave
# (LORASTUDIO_CM2_SPLIT_BELOW=133) and 7B nf4 decode with the new build only.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s12a_fixes.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
unpack_old_bench
link_source_dir
# The models are made on the CPU while the tests use the GPU.
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in attention_test matmul_test quant_op_test quantized_model_test training_test; do
  timeout 100 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
for v in old new; do
  X=$B/lorastudio-bench; [ $v = old ] && X=$W/old/lorastudio-bench
  timeout 90 $X micro --filter attention_ --iters 20 > $R/micro_attention_$v.txt 2>&1
  echo "micro attention $v rc=$? at ${SECONDS}s"
done
grep -hE "flash" $R/micro_attention_*.txt | head -40
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for v in old new; do
  X=$B/lorastudio-bench; [ $v = old ] && X=$W/old/lorastudio-bench
  timeout 60 $X train --model /tmp/q05 --batch 1 --seq 512 --steps 5 > $R/train05_b1_$v.txt 2>&1
  echo "train 0.5B B1 $v rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/train05_b1_$v.txt
  timeout 90 $X train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7_$v.txt 2>&1
  echo "train 7B $v rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7_$v.txt
done
timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 8 --seq 512 --steps 5 > $R/train05_b8_new.txt 2>&1
echo "train 0.5B B8 new rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b8_new.txt
# Tuning: split-K for products that fill up to one wave of the 132 SMs (default: under half).
for m in 05 7; do
  left=$((500 - SECONDS)); [ $left -gt 40 ] || continue
  LORASTUDIO_CM2_SPLIT_BELOW=133 timeout $left $B/lorastudio-bench train --model /tmp/q$m --batch 1 --seq 512 --steps 5 > $R/train${m}_split133.txt 2>&1
  echo "train $m split below 133 rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/train${m}_split133.txt
done
left=$((580 - SECONDS)); [ $left -gt 40 ] && {
  timeout $left $B/lorastudio-bench inference --model /tmp/q7 --quantize nf4 > $R/infer7_nf4.txt 2>&1
  echo "inference 7B nf4 rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/infer7_nf4.txt; }
tar czf $OUT/s12a.tar.gz -C $OUT r && rm -rf $R
