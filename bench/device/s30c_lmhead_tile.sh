#!/bin/bash
# Session 30, call 3: the lm_head's logits on the 128×128 tile at up to 512 rows (ops/matmul.cpp cm2_tile: at least 8
# tiles an SM) against call 2's binary (ba711b5, .gpu/carry/old), alternated: training_test, 0.5B B1 and B8, prefill,
# and a B1 trace. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s30c_lmhead_tile.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1)
gpu_tests training_test
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
for i in 1 2; do
  run b1_new.$i $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9
  run b1_old.$i $W/old/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9
  run b8_new.$i $B/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
  run b8_old.$i $W/old/lorastudio-bench --model /tmp/q05 --batch 8 --seq 512 --steps 5
  pf pf_new.$i $B/lorastudio-bench
  pf pf_old.$i $W/old/lorastudio-bench
done
run b1_trace $B/lorastudio-bench --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
tar czf $OUT/s30c.tar.gz -C $OUT r && rm -rf $R
