#!/bin/bash
# Session 9, device call 4: the 7B shape (make_model.py --shape 7b, seeded random bf16 weights) with the
# coopmat2 GEMM: our training step (B1×T512) and prefill/decode, then the eager PyTorch+PEFT peer and, in the
# time left, the compiled one (--compile reduce-overhead), on the same folder.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s9d_train_7b.sh
source "$(dirname "$0")/common.sh"
cd .gpu/carry/peers
timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model.txt 2>&1; echo "make_model rc=$? at ${SECONDS}s"; tail -1 $R/make_model.txt
timeout 120 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7b_b1_cm2.txt 2>&1
echo "train 7B rc=$? at ${SECONDS}s"; sed -n 10,40p $R/train7b_b1_cm2.txt
timeout 90 $B/lorastudio-bench inference --model /tmp/q7 > $R/inference_7b.txt 2>&1
echo "inference 7B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference_7b.txt | head -3
timeout 150 python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro > $R/peer7b_eager.txt 2>&1
echo "peer eager rc=$? at ${SECONDS}s"; grep -E "train_|prefill" $R/peer7b_eager.txt
left=$((570 - SECONDS)); [ $left -gt 30 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro --compile reduce-overhead > $R/peer7b_compiled.txt 2>&1
  echo "peer compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill" $R/peer7b_compiled.txt; }
tar czf $OUT/s9d.tar.gz -C $OUT r && rm -rf $R
