#!/bin/bash
# Session 23, device call 4 (H200): measurement only, for issue 21's next step: the training step at the 7B and 0.5B
# shapes with the flash backward's splits forced (LORASTUDIO_FLASH_SPLITS 1, 2, 4; the default picks 4 at both) and
# 128 invocations a flash workgroup (LORASTUDIO_FLASH_CM2_THREADS), each beside the default in the same call, with a
# trace of the default 7B step.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s23d_flash_splits.sh
source "$(dirname "$0")/common.sh"
make_models
train() {  # name, args...
  local n=$1; shift
  timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/$n.txt | head -1
}
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
train b1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
for s in 1 2 4; do LORASTUDIO_FLASH_SPLITS=$s train b1_s$s --model /tmp/q05 --batch 1 --seq 512 --steps 9; done
LORASTUDIO_FLASH_CM2_THREADS=128 train b1_t128 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train b1_again --model /tmp/q05 --batch 1 --seq 512 --steps 9
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train 7b --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
for s in 1 2 4; do LORASTUDIO_FLASH_SPLITS=$s train 7b_s$s --model /tmp/q7 --batch 1 --seq 512 --steps 5; done
LORASTUDIO_FLASH_CM2_THREADS=128 train 7b_t128 --model /tmp/q7 --batch 1 --seq 512 --steps 5
train 7b_again --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s23d.tar.gz -C $OUT r && rm -rf $R
