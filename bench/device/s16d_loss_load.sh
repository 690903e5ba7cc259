#!/bin/bash
# Session 16, device call 4 (named nvidia-h100-x1): issue 23's loss row and the loader on all cores.
# 1. The 0.5B shape (make_model.py) trained 100 steps with `lorastudio --batch` on the demo data (assets/demo), bf16
#    base against nf4 and q8: (A) the defaults (r8 q,v, lr 2e-4), (B) r16 on all seven projections, lr 1e-3, batch 6,
#    seq 128; the last training loss and the validation loss of each.
# 2. The 7B shape's load time, bf16 and nf4 (session 16 call 2, before: 55.0 s and 59.0-67.7 s).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s16d_loss_load.sh
source "$(dirname "$0")/common.sh"
D=$PWD/assets/demo
cd .gpu/carry/peers
(timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$?" >> $R/make_model7.txt) &
MK=$!
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
run() {  # name, options
  timeout 120 $B/lorastudio --batch --model /tmp/q05 --data $D/demo_train.jsonl --val-data $D/demo_val.jsonl --steps 100 \
    --out /tmp/runs/$1 --store /tmp/runs/store.sqlite "${@:2}" > $R/loss_$1.txt 2>&1
  echo "loss $1 rc=$? at ${SECONDS}s"; grep -iE "step +100|val|final" $R/loss_$1.txt | tail -3
}
for q in none nf4 q8; do run A_$q --quantize $q; done
for q in none nf4 q8; do
  run B_$q --quantize $q --rank 16 --alpha 32 --targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj \
    --lr 1e-3 --batch-size 6 --seq-len 128
done
wait $MK; tail -1 $R/make_model7.txt; echo "7B model at ${SECONDS}s"
for q in none nf4; do
  left=$((585 - SECONDS)); [ $left -gt 40 ] || break
  timeout $((left < 120 ? left : 120)) $B/lorastudio-bench train --model /tmp/q7 --quantize $q --batch 1 --seq 512 --steps 3 > $R/train7_$q.txt 2>&1
  echo "train 7B $q rc=$? at ${SECONDS}s"; grep -E "loaded|tok/s|memory held" $R/train7_$q.txt | head -3
done
tar czf $OUT/s16d.tar.gz -C $OUT r && rm -rf $R
