#!/bin/bash
# Session 13, device call 1 (named nvidia-h100-x1): flash attention on GL_NV_cooperative_matrix2
# (shaders/flash_attention_cm2.comp). Checked on the GPU (attention_test, also with the backward forced to 3
# splits; training_test; memory_plan_test), then timed in one binary against the GL_NV_cooperative_matrix
# kernels (LORASTUDIO_FLASH_CM2=0) and at 128 and 256 invocations a workgroup: the attention micro cases,
# 0.5B B1 and B8, 7B B1, the backward's splits, and prefill; the 7B MLP products with each cm2 tile and split-K.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s13a_flash_cm2.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
# The models are made on the CPU while the tests use the GPU.
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in attention_test training_test memory_plan_test; do
  timeout 100 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -8
done
LORASTUDIO_FLASH_SPLITS=3 timeout 60 $B/attention_test --gtest_filter='*Backward*' > $R/attention_splits3.txt 2>&1
echo "attention_test backward, 3 splits rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/attention_splits3.txt | head -4
declare -A CFG=([cm1]="LORASTUDIO_FLASH_CM2=0" [cm2_128]="LORASTUDIO_FLASH_CM2_THREADS=128" [cm2_256]="LORASTUDIO_FLASH_CM2_THREADS=256")
for c in cm1 cm2_128 cm2_256; do
  env ${CFG[$c]} timeout 60 $B/lorastudio-bench micro --filter attention_ --iters 20 > $R/micro_$c.txt 2>&1
  echo "micro attention $c rc=$? at ${SECONDS}s"; grep -E "flash" $R/micro_$c.txt | head -12
done
# The 7B MLP products (f16 operands) with each cm2 tile forced, and split-K up to 133 or 225 tiles.
for c in default l t m s split133 split225; do
  case $c in default) e=X=1;; split133) e=LORASTUDIO_CM2_SPLIT_BELOW=133;; split225) e=LORASTUDIO_CM2_SPLIT_BELOW=225;; *) e=LORASTUDIO_CM2_TILE=$c;; esac
  env $e timeout 40 $B/lorastudio-bench micro --filter train16_7b --iters 20 > $R/micro_gemm7_$c.txt 2>&1
  echo "micro train16_7b $c rc=$? at ${SECONDS}s"; grep -E "train16_7b" $R/micro_gemm7_$c.txt | head -4
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for c in cm1 cm2_128 cm2_256; do
  env ${CFG[$c]} timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 5 > $R/train05_b1_$c.txt 2>&1
  echo "train 0.5B B1 $c rc=$? at ${SECONDS}s"; grep -E "tok/s|attention" $R/train05_b1_$c.txt | head -4
  env ${CFG[$c]} timeout 90 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7_$c.txt 2>&1
  echo "train 7B $c rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|attention" $R/train7_$c.txt | head -4
done
for s in 1 2; do
  LORASTUDIO_FLASH_SPLITS=$s timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 5 > $R/train05_b1_splits$s.txt 2>&1
  echo "train 0.5B B1 cm2 splits $s rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/train05_b1_splits$s.txt
  LORASTUDIO_FLASH_SPLITS=$s timeout 90 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7_splits$s.txt 2>&1
  echo "train 7B cm2 splits $s rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/train7_splits$s.txt
done
for c in cm1 cm2_128; do
  left=$((540 - SECONDS)); [ $left -gt 30 ] || continue
  env ${CFG[$c]} timeout $left $B/lorastudio-bench train --model /tmp/q05 --batch 8 --seq 512 --steps 5 > $R/train05_b8_$c.txt 2>&1
  echo "train 0.5B B8 $c rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b8_$c.txt
done
for c in cm1 cm2_128; do
  left=$((585 - SECONDS)); [ $left -gt 30 ] || continue
  env ${CFG[$c]} timeout $left $B/lorastudio-bench inference --model /tmp/q05 > $R/infer05_$c.txt 2>&1
  echo "inference 0.5B $c rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer05_$c.txt | head -2
done
tar czf $OUT/s13a.tar.gz -C $OUT r && rm -rf $R
