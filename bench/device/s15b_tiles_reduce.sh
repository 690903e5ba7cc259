#!/bin/bash
# Session 15, device call 2 (named nvidia-h100-x1): the split-K reduce with several lanes an output
# (shaders/matmul_splitk_reduce.comp; LORASTUDIO_REDUCE_LANES=1 is the previous one-lane reduce) and two more
# coopmat2 tiles, w (64×128) and h (128×64), for the 0.5B shape's products. matmul_test on the GPU with the
# default tiles and each new one forced; the 0.5B products (micro train16_512*, f16 operands) at every tile;
# 0.5B B1 and B8 steps with one and several reduce lanes, and B1 with each tile forced for the whole step.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s15b_tiles_reduce.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "models rc=$?" >> $R/make_model05.txt) &
MK=$!
for c in default w h; do
  e=X=1; [ $c != default ] && e=LORASTUDIO_CM2_TILE=$c
  env $e timeout 120 $B/matmul_test > $R/matmul_test_$c.txt 2>&1; echo "matmul_test $c rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/matmul_test_$c.txt | head -6
done
timeout 100 $B/training_test > $R/training_test.txt 2>&1; echo "training_test rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/training_test.txt | head -4
for c in l t m s w h; do
  LORASTUDIO_CM2_TILE=$c timeout 60 $B/lorastudio-bench micro --filter train16_512 --iters 50 > $R/micro_$c.txt 2>&1
  echo "micro train16_512 tile $c rc=$? at ${SECONDS}s"; grep -E "train16_512" $R/micro_$c.txt | head -8
done
wait $MK; tail -1 $R/make_model05.txt
for b in 1 8; do
  for c in lanes1 new; do
    e=X=1; [ $c = lanes1 ] && e=LORASTUDIO_REDUCE_LANES=1
    env $e timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b${b}_$c.txt 2>&1
    echo "train 0.5B B$b $c rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|lora  " $R/train05_b${b}_$c.txt
  done
done
for c in w h t s; do
  LORASTUDIO_CM2_TILE=$c timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 5 > $R/train05_b1_tile$c.txt 2>&1
  echo "train 0.5B B1 tile $c rc=$? at ${SECONDS}s"; grep -E "tok/s|  mlp|  attention" $R/train05_b1_tile$c.txt
done
timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 5 > $R/train05_b1_new2.txt 2>&1
echo "train 0.5B B1 new again rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/train05_b1_new2.txt
tar czf $OUT/s15b.tar.gz -C $OUT r && rm -rf $R
