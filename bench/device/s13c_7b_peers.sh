#!/bin/bash
# Session 13, device call 3 (named nvidia-h100-x1): the 7B rows beside both PyTorch+PEFT peers in one call:
# our step (B1×T512) as session 12 ran it (base: LORASTUDIO_FLASH_CM2=0 LORASTUDIO_F16_GATE_UP=0
# LORASTUDIO_F16_LOGITS=0) and with this session's defaults, our prefill, then the eager peer and, in the time
# left, the compiled one (--compile reduce-overhead), on the same folder.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s13c_7b_peers.sh
source "$(dirname "$0")/common.sh"
cd .gpu/carry/peers
timeout 200 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$? at ${SECONDS}s"
BASE="LORASTUDIO_FLASH_CM2=0 LORASTUDIO_F16_GATE_UP=0 LORASTUDIO_F16_LOGITS=0"
for c in new base; do
  e=X=1; [ $c = base ] && e=$BASE
  env $e timeout 100 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7_$c.txt 2>&1
  echo "train 7B $c rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7_$c.txt
done
timeout 70 $B/lorastudio-bench inference --model /tmp/q7 > $R/infer7_new.txt 2>&1
echo "inference 7B new rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer7_new.txt | head -2
timeout 120 python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro > $R/peer7_eager.txt 2>&1
echo "peer eager rc=$? at ${SECONDS}s"; grep -E "train_|prefill" $R/peer7_eager.txt
left=$((530 - SECONDS)); [ $left -gt 30 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro --compile reduce-overhead > $R/peer7_compiled.txt 2>&1
  echo "peer compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill" $R/peer7_compiled.txt; }
tar czf $OUT/s13c.tar.gz -C $OUT r && rm -rf $R
