#!/bin/bash
# Session 36, call 2: the fused q/k/v dx on by default (LORASTUDIO_QKV_FUSED=0 keeps three products): the GPU tests
# that load weights (q, k and v now share an allocation on coopmat2 devices), and the 0.5B B8 step, whose
# LORASTUDIO_QKV_FUSED=0 run timed out (100 s, no output: stdout is buffered) as call 1's first B8 run, beside the
# default twice; line-buffered here. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry.
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1)
gpu_tests generator_golden_test arch_golden_test training_test quantized_model_test
b8() {
  local n=$1 e=$2
  env $e timeout 150 stdbuf -oL $B/lorastudio-bench train --model /tmp/q05 --batch 8 --seq 512 --steps 5 > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
}
b8 b8_new1 ""
b8 b8_noqkv LORASTUDIO_QKV_FUSED=0
b8 b8_new2 ""
tar czf $OUT/s36b.tar.gz -C $OUT r
train_env b1_new1 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_noqkv LORASTUDIO_QKV_FUSED=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
prefill_env pf "" --model /tmp/q05
tar czf $OUT/s36b.tar.gz -C $OUT r
