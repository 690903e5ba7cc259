#!/bin/bash
# Session 11, device call 3: the coopmat2 epilogue in registers (bias, LoRA) checked and measured; the 0.5B
# rows of issue 21's table beside both peers in one call; issue 22's golden fixtures.
# 1. matmul_test (all: the coopmat2 epilogue cases), memory_plan_test (the plan against the H100's measured
#    peak), quantized_model_test, attention_test (LS_TEST_NO_VALIDATION=1: Debian 12's layer predates coopmat2);
# 2. 0.5B: ours B1, B8 and inference; PyTorch+PEFT eager and compiled (reduce-overhead) at B1 and B8;
# 3. tests/fixtures/make_arch_fixtures.py (transformers on the CPU, in the background) into $OUT/fx.tar.gz.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s11c_05b_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
(cd .gpu/carry/fx && timeout 300 python3 make_arch_fixtures.py --only qwen3_tiny,phi3_tiny,gemma3_tiny --out /tmp/fx > $R/fixtures.txt 2>&1
 echo "fixtures rc=$?" >> $R/fixtures.txt; tar czf $OUT/fx.tar.gz -C /tmp fx) &
FX=$!
for t in matmul_test memory_plan_test quantized_model_test attention_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/$t.txt | head -6
done
cd .gpu/carry/peers
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
for b in 1 8; do
  timeout 90 $B/lorastudio-bench train --model /tmp/q05 --batch $b --seq 512 --steps 5 > $R/train05_b$b.txt 2>&1
  echo "train 0.5B B$b rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b$b.txt
done
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/inference05.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference05.txt | head -2
for c in none reduce-overhead; do
  for b in 1 8; do
    left=$((560 - SECONDS)); [ $left -gt 45 ] || { echo "skip peer $c B$b: ${left}s left"; continue; }
    timeout $((left < 150 ? left : 150)) python3 torch_peft_bench.py --model /tmp/q05 --batch $b --skip-micro --compile $c > $R/peer05_${c}_b$b.txt 2>&1
    echo "peer $c B$b rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_${c}_b$b.txt | head -4
  done
done
wait $FX; tail -2 $R/fixtures.txt
tar czf $OUT/s11c.tar.gz -C $OUT r && rm -rf $R
