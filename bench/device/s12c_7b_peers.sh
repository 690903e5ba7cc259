#!/bin/bash
# Session 12, device call 3 (named nvidia-h100-x1): the 7B rows of issue 21's table beside both PyTorch+PEFT
# peers in one call: our training step (B1×T512) and prefill, then the eager peer and, in the time left, the
# compiled one (--compile reduce-overhead), on the same folder.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s12c_7b_peers.sh
source "$(dirname "$0")/common.sh"
cd .gpu/carry/peers
timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$? at ${SECONDS}s"
for q in none; do
  timeout 100 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize $q > $R/train7_$q.txt 2>&1
  echo "train 7B $q rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7_$q.txt
done
for q in none; do
  timeout 70 $B/lorastudio-bench inference --model /tmp/q7 --quantize $q > $R/infer7_$q.txt 2>&1
  echo "inference 7B $q rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer7_$q.txt | head -2
done
timeout 150 python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro > $R/peer7_eager.txt 2>&1
echo "peer eager rc=$? at ${SECONDS}s"; grep -E "train_|prefill" $R/peer7_eager.txt
left=$((575 - SECONDS)); [ $left -gt 30 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro --compile reduce-overhead > $R/peer7_compiled.txt 2>&1
  echo "peer compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill" $R/peer7_compiled.txt; }
tar czf $OUT/s12c.tar.gz -C $OUT r && rm -rf $R
