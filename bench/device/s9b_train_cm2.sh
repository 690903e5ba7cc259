#!/bin/bash
# Session 9, device call 2: the transposed coopmat2 tile (ggml's orientation): correctness (matmul_test; the
# installed validation layer predates VK_NV_cooperative_matrix2, so LS_TEST_NO_VALIDATION=1), the GEMM per
# forced tile, the training products, then the 0.5B training step with coopmat2 and with the NV path beside
# the eager PyTorch+PEFT peer (which also writes the model, seeded random bf16 weights).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry (bins.tar.xz; peers/ with torch_peft_bench.py and
# make_model.py; tok/ with Qwen's tokenizer files). Run: bash bench/device/s9b_train_cm2.sh
source "$(dirname "$0")/common.sh"
LORASTUDIO_COOPMAT2=1 LS_TEST_NO_VALIDATION=1 timeout 100 $B/matmul_test > $R/matmul_test_cm2.txt 2>&1
echo "matmul_test cm2 rc=$?"; grep -E "FAILED|tests ran|PASSED" $R/matmul_test_cm2.txt | head -20
for t in auto l m; do
  tt=$t; [ $t = auto ] && tt=
  LORASTUDIO_COOPMAT2=1 LORASTUDIO_CM2_TILE=$tt timeout 60 stdbuf -oL $B/lorastudio-bench micro --filter gemm_ --iters 20 \
    > $R/gemm_cm2_$t.txt 2>&1; echo "gemm $t rc=$?"; grep "_f16 " $R/gemm_cm2_$t.txt
done
LORASTUDIO_COOPMAT2=1 timeout 60 stdbuf -oL $B/lorastudio-bench micro --filter train --iters 20 > $R/train_micro_cm2.txt 2>&1
echo "train micro rc=$?"; grep train $R/train_micro_cm2.txt
(cd .gpu/carry/peers && timeout 120 python3 torch_peft_bench.py --save-model /tmp/qwen05 --batch 1 --skip-micro > $R/peer_eager_b1.txt 2>&1)
echo "peer rc=$?"; tail -3 $R/peer_eager_b1.txt
cp .gpu/carry/tok/* /tmp/qwen05/
for b in 1 8; do
  for mode in cm2 nv; do
    e=""; [ $mode = cm2 ] && e="LORASTUDIO_COOPMAT2=1"
    env $e timeout 60 $B/lorastudio-bench train --model /tmp/qwen05 --batch $b --seq 512 --steps 5 > $R/train_b${b}_$mode.txt 2>&1
    echo "train B$b $mode rc=$?"; head -4 $R/train_b${b}_$mode.txt
  done
done
tar czf $OUT/s9b.tar.gz -C $OUT r
