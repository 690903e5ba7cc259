#!/bin/bash
# Session 25, device call 1 (H200): the cooperative-matrix-2 flash kernels' new switches and block sizes, timed in
# one binary and one call (micro, f16 q/k/v/o as training keeps them; each knob an environment variable read
# once per process): dO read as an f16 copy (always on now), f16 inputs loaded straight into the operand
# matrices (LORASTUDIO_FLASH_DIRECT), the heaviest query blocks first (_HEAVY_FIRST), the forward's K/V loads
# ahead of the softmax (_PREFETCH), block sizes per kernel (_FWD_TILE, _DQ_TILE, _DKDV_TILE); the kernels'
# registers; GPU tests; 0.5B B1 and 7B steps with the switches off and on.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s25a_flash_knobs.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
OFF="LORASTUDIO_FLASH_DIRECT=0 LORASTUDIO_FLASH_HEAVY_FIRST=0 LORASTUDIO_FLASH_PREFETCH=0"
gpu_tests attention_test
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter attention16_7b --iters 10 > $R/stats.txt 2>&1
grep -A3 -i "flash_attention_cm2" $R/stats.txt | head -40
micro_env off attention16_ $OFF
micro_env default attention16_
micro_env direct_only attention16_ LORASTUDIO_FLASH_HEAVY_FIRST=0 LORASTUDIO_FLASH_PREFETCH=0
micro_env no_prefetch attention16_ LORASTUDIO_FLASH_PREFETCH=0
micro_env no_heavy attention16_ LORASTUDIO_FLASH_HEAVY_FIRST=0
micro_env fwd32x64 attention16_ LORASTUDIO_FLASH_FWD_TILE=32x64
micro_env fwd128x64 attention16_ LORASTUDIO_FLASH_FWD_TILE=128x64
micro_env fwd64x32 attention16_ LORASTUDIO_FLASH_FWD_TILE=64x32
micro_env fwd64x128 attention16_ LORASTUDIO_FLASH_FWD_TILE=64x128
micro_env dq32x64 attention16_ LORASTUDIO_FLASH_DQ_TILE=32x64
micro_env dq64x32 attention16_ LORASTUDIO_FLASH_DQ_TILE=64x32
micro_env dq64x128 attention16_ LORASTUDIO_FLASH_DQ_TILE=64x128
micro_env dq128x64 attention16_ LORASTUDIO_FLASH_DQ_TILE=128x64
micro_env dkdv32x64 attention16_ LORASTUDIO_FLASH_DKDV_TILE=32x64
micro_env dkdv64x32 attention16_ LORASTUDIO_FLASH_DKDV_TILE=64x32
micro_env dkdv64x128 attention16_ LORASTUDIO_FLASH_DKDV_TILE=64x128
micro_env dkdv128x64 attention16_ LORASTUDIO_FLASH_DKDV_TILE=128x64
micro_env t128 attention16_ LORASTUDIO_FLASH_CM2_THREADS=128
micro_env default_again attention16_
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 200 ]; do sleep 2; done
train_env b1_off "$OFF" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_on "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_off2 "$OFF" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_on2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_off "$OFF" --model /tmp/q7 --batch 1 --seq 512 --steps 5
train_env 7b_on "" --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s25a.tar.gz -C $OUT r && rm -rf $R
