#!/bin/bash
# The SG kernels it measured were taken out after it (commit 2dea4db holds them); LORASTUDIO_FLASH_SG no longer exists.
# Session 34, call 1: the flash kernels with subgroup-scope matrices (LORASTUDIO_FLASH_SG=1, shaders/flash_attention_cm2.comp
# SG) against the workgroup-scope ones in the same call: GPU tests with them (attention_test, generator_golden_test,
# training_test), their registers, micro at the 0.5B shapes over blocks and workgroup sizes, then the 0.5B B8 and B1 steps.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s34a_flash_sg.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
export LORASTUDIO_FLASH_SG=1
gpu_tests attention_test
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter attention16_05b --iters 10 > $R/stats.txt 2>&1
grep "flash_attention_cm2" $R/stats.txt | sed 's/Binary Size.*Local Memory Size=/lmem=/' | head -12
micro_env sg attention16_05b X=1
micro_env wg attention16_05b LORASTUDIO_FLASH_SG=0
micro_env sg_f64 attention16_05b LORASTUDIO_FLASH_SG_FWD=16x64 LORASTUDIO_FLASH_SG_DQ=16x64 LORASTUDIO_FLASH_SG_DKDV=16x32
micro_env sg_r32 attention16_05b LORASTUDIO_FLASH_SG_FWD=32x32 LORASTUDIO_FLASH_SG_DQ=32x32 LORASTUDIO_FLASH_SG_DKDV=32x16
micro_env sg_t64 attention16_05b LORASTUDIO_FLASH_SG_THREADS=64
micro_env sg_t256 attention16_05b LORASTUDIO_FLASH_SG_THREADS=256
gpu_tests generator_golden_test training_test
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env b8_sg "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_wg LORASTUDIO_FLASH_SG=0 --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b1_sg "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_wg LORASTUDIO_FLASH_SG=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
prefill_env pf_sg "" --model /tmp/q05
prefill_env pf_wg LORASTUDIO_FLASH_SG=0 --model /tmp/q05
tar czf $OUT/s34a.tar.gz -C $OUT r
