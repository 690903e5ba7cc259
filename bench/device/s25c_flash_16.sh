#!/bin/bash
# Session 25, device call 3 (H200): call 2's best block sizes made the defaults (16 queries a workgroup for the
# forward and dq, 16 keys a workgroup for dk/dv, 64 a step); swept around them (micro, f16 q/k/v/o, and prefill's
# attention over a KV cache); the switches off one at a time; GPU tests (attention, training, the golden tests
# against transformers, whose prefill takes the flash forward); steps and prefill against session 24's kernels
# (OLD: the same binary, switches off, 64-row blocks) and call 2's 32-row blocks (C32) in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s25c_flash_16.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
OLD="LORASTUDIO_FLASH_DIRECT=0 LORASTUDIO_FLASH_HEAVY_FIRST=0 LORASTUDIO_FLASH_FWD_TILE=64x64 LORASTUDIO_FLASH_DQ_TILE=64x64 LORASTUDIO_FLASH_DKDV_TILE=64x64"
C32="LORASTUDIO_FLASH_FWD_TILE=32x64 LORASTUDIO_FLASH_DQ_TILE=32x64 LORASTUDIO_FLASH_DKDV_TILE=32x64"
gpu_tests attention_test training_test generator_golden_test arch_golden_test quantized_model_test
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter attention16_ --iters 10 > $R/stats.txt 2>&1
grep "flash_attention_cm2" $R/stats.txt | sed 's/Binary Size.*Local Memory Size=/lmem=/' | head -20
micro_env default attention
micro_env old attention $OLD
micro_env c32 attention $C32
micro_env fwd16x32 attention LORASTUDIO_FLASH_FWD_TILE=16x32
micro_env fwd16x128 attention LORASTUDIO_FLASH_FWD_TILE=16x128
micro_env dq16x32 attention LORASTUDIO_FLASH_DQ_TILE=16x32
micro_env dq16x128 attention LORASTUDIO_FLASH_DQ_TILE=16x128
micro_env dkdv16x32 attention LORASTUDIO_FLASH_DKDV_TILE=16x32
micro_env t128 attention LORASTUDIO_FLASH_CM2_THREADS=128
micro_env prefetch attention LORASTUDIO_FLASH_PREFETCH=1
micro_env no_heavy attention LORASTUDIO_FLASH_HEAVY_FIRST=0
micro_env no_direct attention LORASTUDIO_FLASH_DIRECT=0
micro_env default_again attention
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env b1_old "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_c32 "$C32" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new "" --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1_new.tsv
train_env b1_old2 "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_old "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_new "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
env $OLD timeout 100 $B/lorastudio-bench inference --model /tmp/q05 > $R/inf05_old.txt 2>&1; grep -E "^prefill" $R/inf05_old.txt
timeout 100 $B/lorastudio-bench inference --model /tmp/q05 > $R/inf05_new.txt 2>&1; grep -E "^prefill" $R/inf05_new.txt
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_old "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b_new.tsv
train_env 7b_old2 "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_new2 "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_nf4_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize nf4
env $OLD timeout 100 $B/lorastudio-bench inference --model /tmp/q7 > $R/inf7_old.txt 2>&1; grep -E "^prefill" $R/inf7_old.txt
timeout 100 $B/lorastudio-bench inference --model /tmp/q7 > $R/inf7_new.txt 2>&1; grep -E "^prefill" $R/inf7_new.txt
tar czf $OUT/s25c.tar.gz -C $OUT r && rm -rf $R
