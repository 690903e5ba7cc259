#!/bin/bash
# Session 16, device call 7 (named nvidia-h100-x1): quant_op_test with the packed coopmat2 GEMM on
# (LORASTUDIO_QUANT_IN_GEMM=1), which calls 2 and 6 ran with the default scratch: its products of many rows on the
# quantized operand ("packed" in the failure text) at edge tiles and with split K, forward, LoRA forward and dx.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s16g_packed_test.sh
source "$(dirname "$0")/common.sh"
link_source_dir
export LS_TEST_NO_VALIDATION=1
LORASTUDIO_QUANT_IN_GEMM=1 timeout 120 $B/quant_op_test > $R/quant_op_test_packed.txt 2>&1
echo "quant_op_test (packed) rc=$? at ${SECONDS}s"; grep -E "FAILED|PASSED|OK \]" $R/quant_op_test_packed.txt | head -14
tar czf $OUT/s16g.tar.gz -C $OUT r && rm -rf $R
