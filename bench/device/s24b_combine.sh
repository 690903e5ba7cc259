#!/bin/bash
# Session 24, device call 2 (H200): decoding's split attention combined by the last workgroup of each row (no
# combine dispatch: kLastCombines, shaders/attention_split.comp) on top of call 1's bursts. GPU tests; decode at
# 0.5B, 7B and 7B nf4 under the default (bursts of 8, the last workgroup combines), LORASTUDIO_ATTN_COMBINE=1 (the
# combine dispatch) and both off (LORASTUDIO_DECODE_BURST=1 as well: session 23's decode), same binary, same call,
# each twice; batched generation at 0.5B (its per-sequence attention takes the same kernel).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s24b_combine.sh
source "$(dirname "$0")/common.sh"
link_source_dir
make_models
LS_TEST_NO_VALIDATION=1 gpu_tests attention_test generator_golden_test batch_generator_test arch_golden_test quantized_model_test
LORASTUDIO_ATTN_COMBINE=1 LS_TEST_NO_VALIDATION=1 gpu_tests generator_golden_test
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
echo "0.5B model at ${SECONDS}s"
three() {  # name, args: default, the combine dispatch, and session 23's decode
  infer $1 $B/lorastudio-bench "${@:2}"
  LORASTUDIO_ATTN_COMBINE=1 infer $1_combine $B/lorastudio-bench "${@:2}"
  LORASTUDIO_ATTN_COMBINE=1 LORASTUDIO_DECODE_BURST=1 infer $1_old $B/lorastudio-bench "${@:2}"
}
three q05 --model /tmp/q05
three q05_2 --model /tmp/q05
timeout 120 $B/lorastudio-bench inference --model /tmp/q05 --batches 1,16 > $R/q05_batched.txt 2>&1; echo "batched rc=$?"; grep -E "^batched" $R/q05_batched.txt
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
three q7 --model /tmp/q7
infer q7_2 $B/lorastudio-bench --model /tmp/q7
LORASTUDIO_ATTN_COMBINE=1 LORASTUDIO_DECODE_BURST=1 infer q7_2_old $B/lorastudio-bench --model /tmp/q7
infer q7nf4 $B/lorastudio-bench --model /tmp/q7 --quantize nf4
tar czf $OUT/s24b.tar.gz -C $OUT r && rm -rf $R
