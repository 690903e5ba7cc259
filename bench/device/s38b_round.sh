#!/bin/bash
# Session 38, call 2: session 37's epilogues round as a store would (common/round_to.glsl: NVIDIA's driver folded the
# float -> float16_t -> float round trip, so the cooperative-matrix-2 GLU epilogue and the RoPE reduce rounded nothing
# on the H200 in call 1): their GPU tests again, training_test, and the 0.5B B1 step with and without session 37's
# three switches, alternated (the GLU epilogue now off on cooperative-matrix-2 unless LORASTUDIO_GLU_EPILOGUE=1, once);
# the persistent decode layer's registers without the prefetch and by attention load batch, its decode, its GPU test.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s38b_round.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
(cd .gpu/carry/peers && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1) &
timeout 150 $B/matmul_test --gtest_filter='MatmulGlu*:MatmulUnreduced*:MatmulRope*' > $R/matmul_glu.txt 2>&1
echo "matmul_test glu rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" $R/matmul_glu.txt | head -12
timeout 150 $B/training_test > $R/training_test.txt 2>&1
echo "training_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|Which is" $R/training_test.txt | head -12
wait
t() { local n=$1 e=$2; shift 2
  env $e timeout 120 stdbuf -oL $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2; }
OFF="LORASTUDIO_ROPE_IN_REDUCE=0 LORASTUDIO_GLU_EPILOGUE=0 LORASTUDIO_SPLIT_INTO_NORM=0"
for i in 1 2; do
  t b1_new$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  t b1_base$i "$OFF" --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
t b1_glu1 LORASTUDIO_GLU_EPILOGUE=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
# the persistent decode layer's registers without the prefetch (call 1: 214 with 4 pieces prefetched), with the
# attention's load batch at 8, 4 and 2 (LORASTUDIO_DECODE_ATTN_BATCH), and its 0.5B decode beside the default's
for b in 8 4 2; do
  env LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_DECODE_PERSISTENT=1 LORASTUDIO_DECODE_ATTN_BATCH=$b timeout 90 \
    $B/lorastudio-bench inference --model /tmp/q05 --new-tokens 4 > $R/stats_b$b.txt 2>&1
  echo "batch $b:"; grep "pipeline stats: decode_layer" $R/stats_b$b.txt | cut -c1-200 | head -2
done
dec() { local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^decode|profiled|decode_layer" $R/$n.txt | head -4; }
dec d05_base "" --model /tmp/q05
dec d05_p1_b2 "LORASTUDIO_DECODE_PERSISTENT=1 LORASTUDIO_DECODE_ATTN_BATCH=2" --model /tmp/q05
timeout 150 $B/decode_layer_test > $R/decode_layer_test.txt 2>&1
echo "decode_layer_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in" $R/decode_layer_test.txt | head -6
tar czf $OUT/s38b.tar.gz -C $OUT r
