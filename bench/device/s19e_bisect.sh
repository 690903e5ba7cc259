#!/bin/bash
# Session 19, device call 5: which of the session's changes moves memory_plan_test's grad-checkpoint peak on the H100
# (temporary LS_BISECT_* switches, not committed).
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
for e in X=1 LS_BISECT_NO_COPY=1 LS_BISECT_NO_UP_APART=1 LS_BISECT_NO_EARLY=1 LS_BISECT_NO_FUSE=1 LS_BISECT_NO_RING=1 LS_BISECT_NO_ADDNORM=1; do
  env $e timeout 60 $B/memory_plan_test --gtest_filter='*Qwen3AndPhi3*' > $R/mp_$e.txt 2>&1; echo "$e rc=$?"; grep -E "evaluates to|^\[  (PASSED|FAILED) " $R/mp_$e.txt | head -4
done
tar czf $OUT/s19e.tar.gz -C $OUT r && rm -rf $R
