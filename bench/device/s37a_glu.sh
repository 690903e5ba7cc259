#!/bin/bash
# Session 37, call 1: the MLP activation's backward in down's dx product (and o's dx split sums read by the
# attention's delta pass: LORASTUDIO_SPLIT_INTO_NORM=0 keeps its reduce, and session 36's; RoPE in q's and k's
# reduces: LORASTUDIO_ROPE_IN_REDUCE=0) (LORASTUDIO_GLU_EPILOGUE=0 keeps the product
# and the activation's pass), same binary: its GPU tests first (the cooperative-matrix-2 kernels with GLU run only
# here), the 0.5B B1 step alternated, B8, prefill, the 7B B1 step, the compiled peer at B1 and B8; then session 36's
# unrun check (the GPU tests that load weights, q, k and v sharing one allocation by default).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s37a_glu.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
timeout 200 $B/matmul_test --gtest_filter='MatmulGlu*:MatmulUnreduced*:MatmulRope*' > $R/matmul_glu.txt 2>&1
echo "matmul_test glu rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|Which is|fused|d gate|d up" $R/matmul_glu.txt | head -20
gpu_tests training_test
timeout 150 $B/attention_test --gtest_filter='FlashDelta*:AttentionBackward*' > $R/attention_test.txt 2>&1
echo "attention_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/attention_test.txt | head -6
tar czf $OUT/s37a.tar.gz -C $OUT r
micro_env glu down16_
micro_env silu silu16
for t in m w s g; do micro_env tile_$t down16_512 LORASTUDIO_CM2_TILE=$t; done
micro_env gate_g train16_512x896x4864_fwd LORASTUDIO_CM2_TILE=g
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
NOGLU=LORASTUDIO_GLU_EPILOGUE=0
t() { local n=$1 e=$2; shift 2
  env $e timeout 150 stdbuf -oL $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2; }
for i in 1 2; do
  t b1_new$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  t b1_noglu$i $NOGLU --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
t b1_nosplit LORASTUDIO_SPLIT_INTO_NORM=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
t b1_norope LORASTUDIO_ROPE_IN_REDUCE=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
t b1_base "LORASTUDIO_ROPE_IN_REDUCE=0 LORASTUDIO_GLU_EPILOGUE=0 LORASTUDIO_SPLIT_INTO_NORM=0" --model /tmp/q05 --batch 1 --seq 512 --steps 9
t b8_new "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
t b8_noglu $NOGLU --model /tmp/q05 --batch 8 --seq 512 --steps 5
t b8_new2 "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env pf "" --model /tmp/q05
tar czf $OUT/s37a.tar.gz -C $OUT r
compiled_peer 1
compiled_peer 8
tar czf $OUT/s37a.tar.gz -C $OUT r
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
t 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
t 7b_noglu $NOGLU --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s37a.tar.gz -C $OUT r
gpu_tests arch_golden_test generator_golden_test quantized_model_test
tar czf $OUT/s37a.tar.gz -C $OUT r
