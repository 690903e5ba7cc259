#!/bin/bash
# Session 19, device call 4: the tests call 3 failed on the H100, after their fixes (the norm's f16 copy of d x_in
# not made when the layer's forward runs again first; the fused residual add kept to the f32 stream), and the
# checkpointed 0.5B B1 step.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s19d_plan_check.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
for t in norms_test memory_plan_test training_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
done
tar czf $OUT/s19d.tar.gz -C $OUT r && rm -rf $R
