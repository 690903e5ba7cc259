#!/bin/bash
# Session 30, not run (the device budget was spent): split-K by waves for short reductions above 512 rows (ops/matmul.cpp
# kCm2WavesRows) against da33f22 (.gpu/carry/old): B8 and B1 steps, then training_test and matmul_test on the GPU.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s30e_waves_rows.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1)
run() {  # name, binary, args...
  local n=$1 bin=$2; shift 2
  timeout 60 $bin train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
run warm $B/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 2
run b8_new $B/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8_old $W/old/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b1_new $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9
gpu_tests training_test matmul_test
