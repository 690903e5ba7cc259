#!/bin/bash
# Session 39, call 1: session 38's rounding fixes on the GPU (matmul_test's GLU/RoPE epilogues, training_test), the
# 0.5B B1 step with and without session 37's three switches (the GLU epilogue off on cooperative-matrix-2 now),
# then the persistent decode layer with its matrix-vector stages in batches (LORASTUDIO_DECODE_COLS columns a
# subgroup at once x LORASTUDIO_DECODE_DEPTH pieces a lane at once; the attention's load batch
# LORASTUDIO_DECODE_ATTN_BATCH): registers by batch, 0.5B and 7B decode beside the default, its GPU test.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s39a_batches.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
timeout 100 $B/matmul_test --gtest_filter='MatmulGlu*:MatmulUnreduced*:MatmulRope*' > $R/matmul_glu.txt 2>&1
echo "matmul_test glu rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" $R/matmul_glu.txt | head -8
timeout 120 $B/training_test > $R/training_test.txt 2>&1
echo "training_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Which is" $R/training_test.txt | head -8
timeout 150 $B/decode_layer_test > $R/decode_layer_test.txt 2>&1
echo "decode_layer_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in" $R/decode_layer_test.txt | head -6
# registers of the persistent layer by batch (cols x depth x attention batch)
for v in 1x1x8 2x4x8 2x4x2 4x4x2 2x2x2 1x4x2; do
  IFS=x read c d a <<< "$v"
  env LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_DECODE_PERSISTENT=1 LORASTUDIO_DECODE_COLS=$c LORASTUDIO_DECODE_DEPTH=$d \
    LORASTUDIO_DECODE_ATTN_BATCH=$a timeout 60 $B/lorastudio-bench inference --model /tmp/q05 --new-tokens 4 > $R/stats_$v.txt 2>&1
  echo "$v: $(grep -o 'pipeline stats: decode_layer.*' $R/stats_$v.txt | head -1 | cut -c1-160)"
done 2>/dev/null &
STATS=$!
wait $MK 2>/dev/null; wait $STATS
dec() { local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^decode|profiled|decode_layer" $R/$n.txt | head -3; }
P="LORASTUDIO_DECODE_PERSISTENT=1"
dec d05_base "" --model /tmp/q05
for v in 2x4x2 4x4x2 1x4x2 2x2x2 2x4x8; do
  IFS=x read c d a <<< "$v"
  dec d05_p_$v "$P LORASTUDIO_DECODE_COLS=$c LORASTUDIO_DECODE_DEPTH=$d LORASTUDIO_DECODE_ATTN_BATCH=$a" --model /tmp/q05
done
dec d05_base2 "" --model /tmp/q05
dec d7_base "" --model /tmp/q7
dec d7_p_2x4x2 "$P LORASTUDIO_DECODE_COLS=2 LORASTUDIO_DECODE_DEPTH=4 LORASTUDIO_DECODE_ATTN_BATCH=2" --model /tmp/q7
dec d7_p_4x4x2 "$P LORASTUDIO_DECODE_COLS=4 LORASTUDIO_DECODE_DEPTH=4 LORASTUDIO_DECODE_ATTN_BATCH=2" --model /tmp/q7
dec d7_base2 "" --model /tmp/q7
t() { local n=$1 e=$2; shift 2
  env $e timeout 100 stdbuf -oL $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2; }
OFF="LORASTUDIO_ROPE_IN_REDUCE=0 LORASTUDIO_GLU_EPILOGUE=0 LORASTUDIO_SPLIT_INTO_NORM=0"
for i in 1 2; do
  t b1_new$i "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
  t b1_base$i "$OFF" --model /tmp/q05 --batch 1 --seq 512 --steps 9
done
tar czf $OUT/s39a.tar.gz -C $OUT r
