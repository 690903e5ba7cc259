#!/bin/bash
# Session 11, device call 2: this session's changes on the H100 (faster dequantization and packed decode,
# LoRA's dx term in the frozen product's epilogue, flash attention's backward split over more workgroups).
# 1. attention_test, matmul_test's LoRA cases, quant_op_test, quantized_model_test, training_test and
#    memory_plan_test on the H100 (LS_TEST_NO_VALIDATION=1: Debian 12's layer predates coopmat2);
# 2. 0.5B training B1 (split backward, and LORASTUDIO_FLASH_SPLITS=1 in the same call), B8, inference;
# 3. 7B training and inference with the bf16 base and nf4;
# 4. issue 22's golden fixtures (tests/fixtures/make_arch_fixtures.py, transformers on the CPU) into $OUT/fx.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s11b_after.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
(cd .gpu/carry/fx && timeout 300 python3 make_arch_fixtures.py --only qwen3_tiny,phi3_tiny,gemma3_tiny --out $OUT/fx > $R/fixtures.txt 2>&1; echo "fixtures rc=$?" >> $R/fixtures.txt) &
FX=$!
for t in attention_test quant_op_test quantized_model_test training_test memory_plan_test "matmul_test --gtest_filter=*Lora*"; do
  timeout 90 $B/$t > $R/${t%% *}.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED" $R/${t%% *}.txt | head -8
done
cd .gpu/carry/peers
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "make_model 0.5B rc=$? at ${SECONDS}s"
tr() {  # name, model, batch, env...
  timeout 90 env "${@:4}" $B/lorastudio-bench train --model $2 --batch $3 --seq 512 --steps 5 ${Q:+--quantize $Q} > $R/train_$1.txt 2>&1
  echo "train $1 rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train_$1.txt
}
tr 05_b1 /tmp/q05 1 X=1
tr 05_b1_nosplit /tmp/q05 1 LORASTUDIO_FLASH_SPLITS=1
tr 05_b8 /tmp/q05 8 X=1
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/inference05.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference05.txt | head -2
timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$? at ${SECONDS}s"
tr 7b_none /tmp/q7 1 X=1
Q=nf4 tr 7b_nf4 /tmp/q7 1 X=1
for q in nf4 none; do
  left=$((570 - SECONDS)); [ $left -gt 40 ] || { echo "skip inference $q"; continue; }
  timeout $((left < 90 ? left : 90)) $B/lorastudio-bench inference --model /tmp/q7 --quantize $q > $R/inference7_$q.txt 2>&1
  echo "inference 7B $q rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference7_$q.txt | head -2
done
wait $FX; tail -3 $R/fixtures.txt
tar czf $OUT/s11b.tar.gz -C $OUT r && rm -rf $R
