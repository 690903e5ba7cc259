#!/bin/bash
# Session 30, call 4: split-K ring slots for partial sums up to 2 MiB (was 1): the adapter's dA and dB products at
# 0.5B (1.8 MB) no longer share kScratchSplitK with the q product's dx. Against da33f22 (.gpu/carry/old), alternated:
# training_test, memory_plan_test, 0.5B B1 and B8, prefill, a B1 trace.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s30d_ring_bytes.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1)
gpu_tests training_test memory_plan_test
run() {  # name, binary, args...
  local n=$1 bin=$2; shift 2
  timeout 100 $bin train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
pf() {
  local n=$1 bin=$2; shift 2
  timeout 100 $bin inference --model /tmp/q05 > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^prefill 512" $R/$n.txt
}
run warm $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 3
for i in 1 2; do
  run b1_new.$i $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9
  run b1_old.$i $W/old/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
run b8_new $B/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8_old $W/old/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
pf pf_new $B/lorastudio-bench
pf pf_old $W/old/lorastudio-bench
run b1_trace $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
tar czf $OUT/s30d.tar.gz -C $OUT r && rm -rf $R
