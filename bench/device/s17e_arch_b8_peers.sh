#!/bin/bash
# Session 17, device call 5: arch_golden_test with its tolerance for tensor-core training attention (call 4 found
# qwen3_tiny and gemma3_tiny outside the f32 bounds there), and the 0.5B B8 row beside both peers.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s17e_arch_b8_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "model rc=$?" >> $R/make_model05.txt) &
MK=$!
timeout 60 $B/arch_golden_test > $R/arch_golden_test.txt 2>&1; echo "arch_golden_test rc=$? at ${SECONDS}s"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|measured\] (loss|LoRA gradients)" $R/arch_golden_test.txt | head -12
wait $MK; tail -1 $R/make_model05.txt
timeout 100 $B/lorastudio-bench train --model /tmp/q05 --batch 8 --seq 512 --steps 5 > $R/train05_b8.txt 2>&1
echo "train 0.5B B8 rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train05_b8.txt
cd $P
timeout 200 python3 torch_peft_bench.py --model /tmp/q05 --batch 8 --skip-micro > $R/peer05_b8_eager.txt 2>&1
echo "peer eager rc=$? at ${SECONDS}s"; grep -E "train_|memory" $R/peer05_b8_eager.txt
left=$((560 - SECONDS)); [ $left -gt 60 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q05 --batch 8 --skip-micro --compile reduce-overhead > $R/peer05_b8_compiled.txt 2>&1
  echo "peer compiled rc=$? at ${SECONDS}s"; grep -E "train_|memory" $R/peer05_b8_compiled.txt; }
tar czf $OUT/s17e.tar.gz -C $OUT r && rm -rf $R
