#!/bin/bash
# Session 9, device call 3: the coopmat2 GEMM on by default (tile and split-K rules of session 9):
# correctness (matmul_test; LS_TEST_NO_VALIDATION=1 as the installed layer predates VK_NV_cooperative_matrix2),
# the GEMM and the training products beside the NV path (LORASTUDIO_NO_COOPMAT2=1), then the 0.5B training
# step at B1 and B8 and prefill, each beside the eager PyTorch+PEFT peer (which writes the model).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s9c_train_05b.sh
source "$(dirname "$0")/common.sh"
LS_TEST_NO_VALIDATION=1 timeout 100 $B/matmul_test > $R/matmul_test_cm2.txt 2>&1
echo "matmul_test cm2 rc=$?"; grep -E "FAILED|tests ran|PASSED" $R/matmul_test_cm2.txt | head -20
for mode in cm2 nv; do
  e=""; [ $mode = nv ] && e="LORASTUDIO_NO_COOPMAT2=1"
  env $e timeout 60 stdbuf -oL $B/lorastudio-bench micro --filter gemm_ --iters 20 > $R/gemm_$mode.txt 2>&1
  echo "gemm $mode rc=$?"; grep "_f16 " $R/gemm_$mode.txt
  env $e timeout 60 stdbuf -oL $B/lorastudio-bench micro --filter train --iters 20 > $R/train_micro_$mode.txt 2>&1
  echo "train micro $mode rc=$?"; grep train $R/train_micro_$mode.txt
done
(cd .gpu/carry/peers && timeout 120 python3 torch_peft_bench.py --save-model /tmp/qwen05 --batch 1 --skip-micro > $R/peer_eager_b1.txt 2>&1)
echo "peer b1 rc=$?"; grep -E "train|prefill" $R/peer_eager_b1.txt
cp .gpu/carry/tok/* /tmp/qwen05/
(cd .gpu/carry/peers && timeout 90 python3 torch_peft_bench.py --model /tmp/qwen05 --batch 8 --skip-micro > $R/peer_eager_b8.txt 2>&1)
echo "peer b8 rc=$?"; grep -E "train" $R/peer_eager_b8.txt
for b in 1 8; do
  for mode in cm2 nv; do
    e=""; [ $mode = nv ] && e="LORASTUDIO_NO_COOPMAT2=1"
    env $e timeout 60 $B/lorastudio-bench train --model /tmp/qwen05 --batch $b --seq 512 --steps 5 > $R/train_b${b}_$mode.txt 2>&1
    echo "train B$b $mode rc=$?"; sed -n 10,12p $R/train_b${b}_$mode.txt
  done
done
timeout 60 $B/lorastudio-bench inference --model /tmp/qwen05 > $R/inference_05b.txt 2>&1
echo "inference rc=$?"; grep -iE "prefill|decode" $R/inference_05b.txt | head
tar czf $OUT/s9c.tar.gz -C $OUT r && rm -rf $R
