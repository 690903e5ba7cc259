#!/bin/bash
# Session 9, device call 7: the 0.5B training step at B1 and B8 after the logit chunks became multiples of
# 128 rows (ten of 384 and one of 256 at B8, was ten of 416), against call 3's figures.
# Carry as s9e. Run: bash bench/device/s9g_loss_chunks.sh
source "$(dirname "$0")/common.sh"
(cd .gpu/carry/peers && timeout 90 python3 make_model.py /tmp/q05 $T --shape 0.5b > $R/make_05b.txt 2>&1); echo "make 0.5b rc=$?"
for b in 1 8; do
  timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train_b$b.txt 2>&1
  echo "train B$b rc=$?"; sed -n 10,40p $R/train_b$b.txt
done
tar czf $OUT/s9g.tar.gz -C $OUT r && rm -rf $R
