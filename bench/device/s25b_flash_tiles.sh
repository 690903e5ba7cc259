#!/bin/bash
# Session 25, device call 2 (H200): call 1's results made the defaults (f16 inputs straight into the operands,
# heaviest query blocks first, no prefetch, 32-row blocks for the forward, dq and dk/dv); the block sizes swept
# again around them without the prefetch (micro, f16 q/k/v/o), with the prefetch and 128 invocations once more;
# the kernels' registers; GPU tests; 0.5B B1, B8 and 7B steps against session 24's kernels (OLD: the same binary
# with the switches off and 64-row blocks) in the same call, a trace of each.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s25b_flash_tiles.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
OLD="LORASTUDIO_FLASH_DIRECT=0 LORASTUDIO_FLASH_HEAVY_FIRST=0 LORASTUDIO_FLASH_FWD_TILE=64x64 LORASTUDIO_FLASH_DQ_TILE=64x64 LORASTUDIO_FLASH_DKDV_TILE=64x64"
gpu_tests attention_test training_test
LORASTUDIO_PIPELINE_STATS=1 timeout 60 $B/lorastudio-bench micro --filter attention16_ --iters 10 > $R/stats.txt 2>&1
grep "flash_attention_cm2" $R/stats.txt | sed 's/Binary Size.*Local Memory Size=/lmem=/' | head -20
micro_env default attention16_
micro_env old attention16_ $OLD
micro_env fwd64x64 attention16_ LORASTUDIO_FLASH_FWD_TILE=64x64
micro_env fwd32x32 attention16_ LORASTUDIO_FLASH_FWD_TILE=32x32
micro_env fwd16x64 attention16_ LORASTUDIO_FLASH_FWD_TILE=16x64
micro_env fwd32x128 attention16_ LORASTUDIO_FLASH_FWD_TILE=32x128
micro_env dq64x64 attention16_ LORASTUDIO_FLASH_DQ_TILE=64x64
micro_env dq32x32 attention16_ LORASTUDIO_FLASH_DQ_TILE=32x32
micro_env dq16x64 attention16_ LORASTUDIO_FLASH_DQ_TILE=16x64
micro_env dq32x128 attention16_ LORASTUDIO_FLASH_DQ_TILE=32x128
micro_env dkdv64x64 attention16_ LORASTUDIO_FLASH_DKDV_TILE=64x64
micro_env dkdv32x32 attention16_ LORASTUDIO_FLASH_DKDV_TILE=32x32
micro_env dkdv16x64 attention16_ LORASTUDIO_FLASH_DKDV_TILE=16x64
micro_env dkdv32x128 attention16_ LORASTUDIO_FLASH_DKDV_TILE=32x128
micro_env dkdv16x128 attention16_ LORASTUDIO_FLASH_DKDV_TILE=16x128
micro_env prefetch attention16_ LORASTUDIO_FLASH_PREFETCH=1
micro_env t128 attention16_ LORASTUDIO_FLASH_CM2_THREADS=128
micro_env default_again attention16_
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 250 ]; do sleep 2; done
train_env b1_old "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1_old.tsv
train_env b1_new "" --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1_new.tsv
train_env b1_old2 "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b1_new2 "" --model /tmp/q05 --batch 1 --seq 512 --steps 9
train_env b8_old "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
train_env b8_new "" --model /tmp/q05 --batch 8 --seq 512 --steps 5
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
train_env 7b_old "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b_old.tsv
train_env 7b_new "" --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b_new.tsv
tar czf $OUT/s25b.tar.gz -C $OUT r && rm -rf $R
