#!/bin/bash
# Session 23, device call 2 (H200): the 16-row tile with K in slices of ~512 for products of up to 32 rows
# (batched generation's), against the earlier tiles (LORASTUDIO_CM2_FEW_ROWS=0) in the same call: GPU tests, then
# `lorastudio-bench inference --batches 1,4,16` at the 0.5B and 7B shapes, bf16 and nf4.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s23b_few_rows.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests matmul_test quantized_model_test batch_generator_test
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
echo "0.5B model at ${SECONDS}s"
bat() {  # name, args...: the batched lines of an inference run
  local n=$1; shift
  timeout 150 "$@" > $R/$n.txt 2>&1; echo "$n rc=$? at ${SECONDS}s"; grep -E "^batched|^decode" $R/$n.txt
}
bat q05 $B/lorastudio-bench inference --model /tmp/q05 --prefill 64 --batches 1,4,16,32
LORASTUDIO_CM2_FEW_ROWS=0 bat q05_old $B/lorastudio-bench inference --model /tmp/q05 --prefill 64 --batches 16
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
bat q7 $B/lorastudio-bench inference --model /tmp/q7 --prefill 64 --batches 1,4,16,32
LORASTUDIO_CM2_FEW_ROWS=0 bat q7_old $B/lorastudio-bench inference --model /tmp/q7 --prefill 64 --batches 16
bat q7_nf4 $B/lorastudio-bench inference --model /tmp/q7 --prefill 64 --quantize nf4 --batches 1,4,16
tar czf $OUT/s23b.tar.gz -C $OUT r && rm -rf $R
