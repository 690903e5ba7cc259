#!/bin/bash
# Session 11, device call 5 (named nvidia-h100-x1): the conversion reuse and the skinny kernel's smaller shared
# memory, checked (matmul_test, training_test, recorder_test; the training losses against call 2's) and timed:
# 0.5B B1 and B8, 7B B1, each with the profile.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s11e_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
for t in matmul_test training_test recorder_test; do
  timeout 90 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
cd .gpu/carry/peers
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
for b in 1 8; do
  timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b$b.txt 2>&1
  echo "train 0.5B B$b rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b$b.txt
done
timeout 120 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$? at ${SECONDS}s"
timeout 100 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7.txt 2>&1
echo "train 7B rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7.txt
tar czf $OUT/s11e.tar.gz -C $OUT r && rm -rf $R
