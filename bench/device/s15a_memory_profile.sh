#!/bin/bash
# Session 15, device call 1 (named nvidia-h100-x1): the allocator's blocks of their own size for tensors over
# 64 MiB (engine/vk/memory.cpp block_size_for) against the previous build (.gpu/carry/old, which held 23.5 GiB for
# a 7B plan of 17.75), with the bench now reporting device-local blocks apart from host-visible staging; GPU
# tests (device_test's memory cases, memory_plan_test: plan against allocator); full per-kernel profiles (top
# 40) of the 0.5B B1 / B8 and 7B B1 steps, and the 7B prefill (not measured in session 13).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s15a_memory_profile.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
unpack_old_bench
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
timeout 60 $B/device_test --gtest_filter='DeviceMemory*' > $R/device_test.txt 2>&1; echo "device_test rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED|Failure|Expected|Which" $R/device_test.txt | head -8
timeout 100 $B/memory_plan_test > $R/memory_plan_test.txt 2>&1; echo "memory_plan_test rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/memory_plan_test.txt | head -6
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for b in 1 8; do
  for v in old new; do
    bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
    timeout 60 $bin train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b${b}_$v.txt 2>&1
    echo "train 0.5B B$b $v rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b${b}_$v.txt
  done
done
for v in new old; do
  bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
  timeout 100 $bin train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7_$v.txt 2>&1
  echo "train 7B $v rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7_$v.txt
done
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/infer05.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer05.txt | head -2
left=$((585 - SECONDS)); [ $left -gt 30 ] && {
  timeout $left $B/lorastudio-bench inference --model /tmp/q7 > $R/infer7.txt 2>&1
  echo "inference 7B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer7.txt | head -2; }
tar czf $OUT/s15a.tar.gz -C $OUT r && rm -rf $R
