#!/bin/bash
# Session 19, device call 6: the committed build's GPU tests (memory_plan_test with the norm's f16 copies off under
# --grad-checkpoint, the f32-only fused residual add) and its checkpointed 7B nf4 step.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s19f_final_check.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "model rc=$?" >> $R/make_model05.txt) &
MK=$!
for t in norms_test memory_plan_test training_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
done
wait $MK; tail -1 $R/make_model05.txt
for a in "" "--grad-checkpoint"; do
  timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 9 $a > $R/b1$a.txt 2>&1
  echo "b1 $a rc=$?"; grep -E "tok/s|memory held" $R/b1$a.txt | head -2
done
tar czf $OUT/s19f.tar.gz -C $OUT r && rm -rf $R
