#!/bin/bash
# Session 15, device call 4 (named nvidia-h100-x1): issue 21's 0.5B rows with this session's defaults (the
# coopmat2 tiles by reduction length, flat LoRA storage, the norm's accumulating backward; GPU sampling) beside
# the build of call 2 (.gpu/carry/old: 3340480, whose step call 1 timed equal to the session's start) and both
# PyTorch+PEFT peers (eager and --compile reduce-overhead, B1 and B8). The GPU tests first (sample_test: GPU
# sampling against the CPU sampler); decode with GPU and with CPU sampling (LORASTUDIO_CPU_SAMPLING=1).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s15d_05b_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
unpack_old_bench
(cd .gpu/carry/peers && timeout 90 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "models rc=$?" >> $R/make_model05.txt) &
MK=$!
for t in matmul_test training_test memory_plan_test sample_test; do
  timeout 100 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
wait $MK; tail -1 $R/make_model05.txt
for b in 1 8; do
  for v in old new; do
    bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
    timeout 60 $bin train --model /tmp/q05 --batch $b --seq 512 --steps 9 > $R/train05_b${b}_$v.txt 2>&1
    echo "train 0.5B B$b $v rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b${b}_$v.txt
  done
done
for v in old new cpu_sampling; do
  bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
  e=X=1; [ $v = cpu_sampling ] && e=LORASTUDIO_CPU_SAMPLING=1
  env $e timeout 60 $bin inference --model /tmp/q05 > $R/inference05_$v.txt 2>&1
  echo "inference 0.5B $v rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference05_$v.txt | head -2
done
cd .gpu/carry/peers
for c in none reduce-overhead; do
  for b in 1 8; do
    left=$((575 - SECONDS)); [ $left -gt 45 ] || { echo "skip peer $c B$b: ${left}s left"; continue; }
    timeout $((left < 170 ? left : 170)) python3 torch_peft_bench.py --model /tmp/q05 --batch $b --skip-micro --compile $c > $R/peer05_${c}_b$b.txt 2>&1
    echo "peer $c B$b rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_${c}_b$b.txt | head -4
  done
done
tar czf $OUT/s15d.tar.gz -C $OUT r && rm -rf $R
