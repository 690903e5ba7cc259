#!/bin/bash
# Session 12, device call 2 (named nvidia-h100-x1): the 0.5B rows of issue 21's table beside both PyTorch+PEFT
# peers in one call (B1 and B8 × T512, prefill 512), after the changes of s12a and the f16 MLP operands; the
# GPU tests first (memory_plan_test: the plan against the allocator with the f16 operands); 0.5B nf4 decode
# beside session 11's binary.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s12b_05b_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
unpack_old_bench
link_source_dir
for t in matmul_test activations_test memory_plan_test quant_op_test quantized_model_test training_test; do
  timeout 100 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
cd .gpu/carry/peers
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
for b in 1 8; do
  timeout 90 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b$b.txt 2>&1
  echo "train 0.5B B$b rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b$b.txt
done
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/inference05.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference05.txt | head -2
# The packed matvec (nf4 decode) beside session 11's binary: the 0.5B shape's columns are 448 bytes of codes.
for v in old new; do
  X=$B/lorastudio-bench; [ $v = old ] && X=$W/old/lorastudio-bench
  timeout 60 $X inference --model /tmp/q05 --quantize nf4 > $R/inference05_nf4_$v.txt 2>&1
  echo "inference 0.5B nf4 $v rc=$? at ${SECONDS}s"; grep -E "decode" $R/inference05_nf4_$v.txt | head -1
done
for c in none reduce-overhead; do
  for b in 1 8; do
    left=$((570 - SECONDS)); [ $left -gt 45 ] || { echo "skip peer $c B$b: ${left}s left"; continue; }
    timeout $((left < 150 ? left : 150)) python3 torch_peft_bench.py --model /tmp/q05 --batch $b --skip-micro --compile $c > $R/peer05_${c}_b$b.txt 2>&1
    echo "peer $c B$b rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_${c}_b$b.txt | head -4
  done
done
tar czf $OUT/s12b.tar.gz -C $OUT r && rm -rf $R
