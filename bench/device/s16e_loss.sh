#!/bin/bash
# Session 16, device call 5 (named nvidia-h100-x1): issue 23's loss row (call 4's runs, which failed for a library
# the app needs and the bench does not: libstb0 and the X11 client libraries, now in .gpu/extra-debs).
# The 0.5B shape (make_model.py) trained 100 steps with `lorastudio --batch` on the demo data (assets/demo), bf16 base
# against nf4 and q8: (A) the defaults (r8 q,v, lr 2e-4), (B) r16 on all seven projections, lr 1e-3, batch 6, seq 128.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s16e_loss.sh
source "$(dirname "$0")/common.sh"
D=$PWD/assets/demo
cd .gpu/carry/peers
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
run() {  # name, options
  timeout 100 $B/lorastudio --batch --model /tmp/q05 --data $D/demo_train.jsonl --val-data $D/demo_val.jsonl --steps 100 \
    --out /tmp/runs/$1 --store /tmp/runs/store.sqlite "${@:2}" > $R/loss_$1.txt 2>&1
  echo "loss $1 rc=$? at ${SECONDS}s"; grep -iE "loss" $R/loss_$1.txt | tail -3
}
for q in none nf4 q8; do run A_$q --quantize $q; done
for q in none nf4 q8; do
  run B_$q --quantize $q --rank 16 --alpha 32 --targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj \
    --lr 1e-3 --batch-size 6 --seq-len 128
done
cp /tmp/runs/*/metrics* $R/ 2>/dev/null; ls /tmp/runs/A_none > $R/run_files.txt
tar czf $OUT/s16e.tar.gz -C $OUT r && rm -rf $R
