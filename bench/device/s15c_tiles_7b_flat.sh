#!/bin/bash
# Session 15, device call 3 (named nvidia-h100-x1): the adapter, its gradients and moments each in one
# allocation (model::flat_like: one dispatch zeroes the gradients, one AdamW updates every matrix) against the
# previous build (.gpu/carry/old) at 0.5B B1; and whether the 128×64 coopmat2 tile (h), which beat the default
# tiles on every product of the 0.5B B1 step (call 2), also wins at 0.5B B8 and 7B B1 (LORASTUDIO_CM2_TILE forces
# it for every product) and in prefill; the 7B MLP products with tiles m, h and w. GPU tests first.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s15c_tiles_7b_flat.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
unpack_old_bench
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in training_test memory_plan_test; do
  timeout 100 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
for c in m h w; do
  LORASTUDIO_CM2_TILE=$c timeout 60 $B/lorastudio-bench micro --filter train16_7b --iters 20 > $R/micro7_$c.txt 2>&1
  echo "micro train16_7b tile $c rc=$? at ${SECONDS}s"; grep -E "train16_7b" $R/micro7_$c.txt | head -4
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
for v in old new; do
  bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
  timeout 60 $bin train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/train05_b1_$v.txt 2>&1
  echo "train 0.5B B1 $v rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|optimizer|zero grads" $R/train05_b1_$v.txt | head -4
done
for c in default h m; do
  e=X=1; [ $c != default ] && e=LORASTUDIO_CM2_TILE=$c
  env $e timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 8 --seq 512 --steps 5 > $R/train05_b8_$c.txt 2>&1
  echo "train 0.5B B8 $c rc=$? at ${SECONDS}s"; grep -E "tok/s|  mlp|  attention|  loss" $R/train05_b8_$c.txt | head -4
done
for c in default h; do
  e=X=1; [ $c != default ] && e=LORASTUDIO_CM2_TILE=$c
  env $e timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/infer05_$c.txt 2>&1
  echo "inference 0.5B $c rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer05_$c.txt | head -2
done
for c in default h; do
  e=X=1; [ $c != default ] && e=LORASTUDIO_CM2_TILE=$c
  env $e timeout 110 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7_$c.txt 2>&1
  echo "train 7B $c rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|  mlp|  attention" $R/train7_$c.txt | head -4
done
tar czf $OUT/s15c.tar.gz -C $OUT r && rm -rf $R
