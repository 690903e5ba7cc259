#!/bin/bash
# Session 23, device call 5 (H200): the flash backward unsplit at 112 and 224 workgroups (kFlashSplitBelowGroups
# 256 -> 100): GPU tests; the training rows beside the earlier 4 splits (LORASTUDIO_FLASH_SPLITS=4) in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s23e_unsplit.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests attention_test training_test memory_plan_test
train() {  # name, args...
  local n=$1; shift
  timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
train b1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
LORASTUDIO_FLASH_SPLITS=4 train b1_s4 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train b1_again --model /tmp/q05 --batch 1 --seq 512 --steps 9
train b8 --model /tmp/q05 --batch 8 --seq 512 --steps 5
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train 7b --model /tmp/q7 --batch 1 --seq 512 --steps 5
LORASTUDIO_FLASH_SPLITS=4 train 7b_s4 --model /tmp/q7 --batch 1 --seq 512 --steps 5
train 7b_again --model /tmp/q7 --batch 1 --seq 512 --steps 5
train 7b_nf4 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4
tar czf $OUT/s23e.tar.gz -C $OUT r && rm -rf $R
