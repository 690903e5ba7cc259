#!/bin/bash
# Session 20, device call 5 (H200): the norm-fused decode products with float accumulators again (call 4's vec2 ones
# took the 7B GLU product from 91 to 99 us); decode at 0.5B and 7B, twice each, beside session 19's build.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s20e_glu_accumulators.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
make_models
gpu_tests matvec_norm_test generator_golden_test arch_golden_test
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
infer() {  # name, binary, args...
  local n=$1 bin=$2; shift 2
  timeout 120 $bin inference "$@" --prefill 64 > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^decode|profiled|matvec|attention_split" $R/$n.txt | grep -v prefill | head -8
}
infer infer_q05_old $W/old/lorastudio-bench --model /tmp/q05
infer infer_q05 $B/lorastudio-bench --model /tmp/q05
infer infer_q05_2 $B/lorastudio-bench --model /tmp/q05
infer infer_q7_old $W/old/lorastudio-bench --model /tmp/q7
infer infer_q7 $B/lorastudio-bench --model /tmp/q7
infer infer_q7_2 $B/lorastudio-bench --model /tmp/q7
tar czf $OUT/s20e.tar.gz -C $OUT r && rm -rf $R
