#!/bin/bash
# Session 25, device call 5 (H200): for the next session's GEMM work, the cooperative-matrix-2 GEMM's registers and
# shared memory per tile (LORASTUDIO_PIPELINE_STATS=1) and the training products (micro train16_*, f16 operands)
# under each tile forced (LORASTUDIO_CM2_TILE), the final build of call 4. No code changed.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s25e_gemm_registers.sh
source "$(dirname "$0")/common.sh"
for t in m h t w s; do
  LORASTUDIO_PIPELINE_STATS=1 LORASTUDIO_CM2_TILE=$t timeout 60 $B/lorastudio-bench micro --filter train16_ --iters 20 > $R/micro_tile_$t.txt 2>&1
  echo "tile $t rc=$? at ${SECONDS}s"
  grep "pipeline stats: gemm_cm2" $R/micro_tile_$t.txt | sed 's/Binary Size.*Local Memory Size=/lmem=/' | sort -u | head -4
  grep -E "^train16_" $R/micro_tile_$t.txt | cut -c1-33,78-112
done
micro_env default train16_
tar czf $OUT/s25e.tar.gz -C $OUT r && rm -rf $R
