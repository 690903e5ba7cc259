#!/bin/bash
# Session 25, device call 4 (H200): the final flash kernels (32-row blocks, f16 inputs straight into the operands,
# heaviest query blocks first, dO's f16 copy): GPU tests (attention, training, the golden tests against
# transformers, quantized models); micro; training steps and prefill against session 24's kernels (OLD: the same
# binary, switches off, 64-row blocks) in the same call; the 7B nf4 step; the eager PyTorch peer at 7B if time
# is left. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s25d_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
P=$PWD/.gpu/carry/peers
link_source_dir
make_models
OLD="LORASTUDIO_FLASH_DIRECT=0 LORASTUDIO_FLASH_HEAVY_FIRST=0 LORASTUDIO_FLASH_FWD_TILE=64x64 LORASTUDIO_FLASH_DQ_TILE=64x64 LORASTUDIO_FLASH_DKDV_TILE=64x64"
gpu_tests attention_test training_test generator_golden_test arch_golden_test quantized_model_test
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter attention16_ --iters 10 > $R/stats.txt 2>&1
grep "flash_attention_cm2" $R/stats.txt | sed 's/Binary Size.*Local Memory Size=/lmem=/' | head -20
micro_env default attention
micro_env old attention $OLD
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env b1_old "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new "" --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1_new.tsv
train_env b1_old2 "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_old "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_new "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
prefill_env inf05_old "$OLD" --model /tmp/q05
prefill_env inf05_new "" --model /tmp/q05
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_old "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b_new.tsv
train_env 7b_nf4_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4
prefill_env inf7_old "$OLD" --model /tmp/q7
prefill_env inf7_new "" --model /tmp/q7
left=$((540 - SECONDS))
if [ $left -ge 60 ]; then
  (cd $P && timeout $left python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro --new-tokens 20 > $R/peer7_eager.txt 2>&1)
  echo "peer7_eager rc=$? at ${SECONDS}s"; grep -E '"(train_ms_per_step|train_tokens_per_s|train_peak_gib|prefill512_tokens_per_s)"' $R/peer7_eager.txt | paste -sd' '
else echo "peer7_eager skipped at ${SECONDS}s"; fi
tar czf $OUT/s25d.tar.gz -C $OUT r && rm -rf $R
