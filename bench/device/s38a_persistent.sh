#!/bin/bash
# Session 38, call 1: the persistent decode layer (ops::decode_layer_forward, LORASTUDIO_DECODE_PERSISTENT=n: a layer
# in one dispatch of n workgroups a multiprocessor, a grid barrier between its five stages) against the default
# decode (five dispatches a layer), same binary, and with LORASTUDIO_DECODE_PREFETCH=k (the first k weight pieces of
# each stage loaded before its barrier): its GPU test first (the same bits at 132 and 264 workgroups: the grid
# barrier's first run with more than one workgroup), then 0.5B decode alternated default / n=1 / n=2 with the
# per-kernel profile, the 7B decode both ways; then session 37's unrun checks (s37a_glu.sh: the GPU tests of the
# cooperative-matrix-2 GLU and RoPE epilogues, the 0.5B B1 step with and without session 37's three switches).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s38a_persistent.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
timeout 150 $B/decode_layer_test > $R/decode_layer_test.txt 2>&1
echo "decode_layer_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in|Which is|fewer" $R/decode_layer_test.txt | head -12
tar czf $OUT/s38a.tar.gz -C $OUT r
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
dec() { local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench inference "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "^decode|profiled|decode_layer|matvec|attention_split" $R/$n.txt | head -8; }
P=LORASTUDIO_DECODE_PERSISTENT
# Two workgroups a multiprocessor only if the driver gives the kernel at most 128 registers (else they are not all
# resident and the grid barrier would never finish)
env LORASTUDIO_PIPELINE_STATS=1 $P=1 LORASTUDIO_DECODE_PREFETCH=4 timeout 90 $B/lorastudio-bench inference --model /tmp/q05 --new-tokens 4 > $R/stats.txt 2>&1
grep "pipeline stats: decode_layer" $R/stats.txt | cut -c1-400 | head -4
REGS=$(grep "pipeline stats: decode_layer" $R/stats.txt | grep -oiE "register[^=]*=[0-9]+" | grep -oE "[0-9]+$" | sort -n | tail -1)
TWO=0; [ -n "$REGS" ] && [ "$REGS" -le 128 ] && TWO=1
echo "registers $REGS: two a multiprocessor $TWO"
if [ $TWO = 1 ]; then
  LS_TEST_TWO_PER_SM=1 timeout 150 $B/decode_layer_test > $R/decode_layer_test2.txt 2>&1
  echo "decode_layer_test two rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ in|Which is" $R/decode_layer_test2.txt | head -12
fi
for i in 1 2; do
  dec d05_base$i "" --model /tmp/q05
  dec d05_p1_$i $P=1 --model /tmp/q05
  dec d05_p1_pf4_$i "$P=1 LORASTUDIO_DECODE_PREFETCH=4" --model /tmp/q05
  if [ $TWO = 1 ]; then
    dec d05_p2_$i $P=2 --model /tmp/q05
    dec d05_p2_pf2_$i "$P=2 LORASTUDIO_DECODE_PREFETCH=2" --model /tmp/q05
  fi
done
tar czf $OUT/s38a.tar.gz -C $OUT r
timeout 150 $B/matmul_test --gtest_filter='MatmulGlu*:MatmulUnreduced*:MatmulRope*' > $R/matmul_glu.txt 2>&1
echo "matmul_test glu rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|Which is" $R/matmul_glu.txt | head -12
gpu_tests training_test
t() { local n=$1 e=$2; shift 2
  env $e timeout 120 stdbuf -oL $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2; }
t b1_new "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
t b1_base "LORASTUDIO_ROPE_IN_REDUCE=0 LORASTUDIO_GLU_EPILOGUE=0 LORASTUDIO_SPLIT_INTO_NORM=0" --model /tmp/q05 --batch 1 --seq 512 --steps 9
t b1_new2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
tar czf $OUT/s38a.tar.gz -C $OUT r
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
dec d7_base "" --model /tmp/q7
dec d7_p1 $P=1 --model /tmp/q7
dec d7_p1_pf4 "$P=1 LORASTUDIO_DECODE_PREFETCH=4" --model /tmp/q7
tar czf $OUT/s38a.tar.gz -C $OUT r
