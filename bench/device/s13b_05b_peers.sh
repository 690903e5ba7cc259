#!/bin/bash
# Session 13, device call 2 (named nvidia-h100-x1): the GPU tests (memory_plan_test: the plan against the
# allocator with f16 gate/up and f16 logits; attention_test also with the cm2 kernels that transpose in
# registers), then the 0.5B rows in one binary, each change switched off and on in the same call:
# base = LORASTUDIO_FLASH_CM2=0 LORASTUDIO_F16_GATE_UP=0 LORASTUDIO_F16_LOGITS=0 (session 12's step), new = the
# defaults; then both PyTorch+PEFT peers (eager and --compile reduce-overhead, B1 and B8).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s13b_05b_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
(cd .gpu/carry/peers && timeout 90 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "models rc=$?" >> $R/make_model05.txt) &
MK=$!
for t in attention_test training_test memory_plan_test; do
  timeout 100 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
LORASTUDIO_FLASH_CM2_TRANSPOSE=1 timeout 60 $B/attention_test > $R/attention_transpose.txt 2>&1
echo "attention_test transposed in registers rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/attention_transpose.txt | head -4
for c in new transpose; do
  e=X=1; [ $c = transpose ] && e=LORASTUDIO_FLASH_CM2_TRANSPOSE=1
  env $e timeout 60 $B/lorastudio-bench micro --filter attention_ --iters 20 > $R/micro_$c.txt 2>&1
  echo "micro attention $c rc=$? at ${SECONDS}s"; grep -E "flash" $R/micro_$c.txt | head -6
done
wait $MK; tail -1 $R/make_model05.txt
BASE="LORASTUDIO_FLASH_CM2=0 LORASTUDIO_F16_GATE_UP=0 LORASTUDIO_F16_LOGITS=0"
for b in 1 8; do
  for c in base new transpose gate_up_off logits_off; do
    [ $b = 1 ] && { [ $c = gate_up_off ] || [ $c = logits_off ]; } && continue
    case $c in base) e=$BASE;; new) e=X=1;; transpose) e=LORASTUDIO_FLASH_CM2_TRANSPOSE=1;;
      gate_up_off) e=LORASTUDIO_F16_GATE_UP=0;; logits_off) e=LORASTUDIO_F16_LOGITS=0;; esac
    env $e timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b${b}_$c.txt 2>&1
    echo "train 0.5B B$b $c rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b${b}_$c.txt
  done
done
for c in base new; do
  e=X=1; [ $c = base ] && e=$BASE
  env $e timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/inference05_$c.txt 2>&1
  echo "inference 0.5B $c rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference05_$c.txt | head -2
done
cd .gpu/carry/peers
for c in none reduce-overhead; do
  for b in 1 8; do
    left=$((575 - SECONDS)); [ $left -gt 45 ] || { echo "skip peer $c B$b: ${left}s left"; continue; }
    timeout $((left < 150 ? left : 150)) python3 torch_peft_bench.py --model /tmp/q05 --batch $b --skip-micro --compile $c > $R/peer05_${c}_b$b.txt 2>&1
    echo "peer $c B$b rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_${c}_b$b.txt | head -4
  done
done
tar czf $OUT/s13b.tar.gz -C $OUT r && rm -rf $R
