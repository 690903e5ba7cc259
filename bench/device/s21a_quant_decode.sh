#!/bin/bash
# Session 21, device call 1 (H200): QLoRA bases decoding through the pieces kernel (shaders/quant_matvec8.comp) and
# the norm-fused packed products (shaders/quant_matvec_norm.comp), 7B and 0.5B, beside session 19's build (cd3a8a0:
# the 16-byte kernel, norms apart) and this build with LORASTUDIO_QMATVEC=16; column rounds a workgroup
# (LORASTUDIO_MATVEC_ROUNDS) on the bf16 and nf4 7B decode.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s21a_quant_decode.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
make_models
gpu_tests quant_op_test matvec_norm_test quantized_model_test generator_golden_test
LORASTUDIO_QMATVEC=16 gpu_tests quant_op_test
LORASTUDIO_MATVEC_ROUNDS=3 gpu_tests matvec_norm_test
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
kernels() { grep -E "qmatvec|matvec_norm|matvec8" $R/$1.txt | head -8; }
run() {  # name, env assignment or -, binary, args...: skipped past 520 s of the call
  local n=$1 e=$2; shift 2
  if [ $SECONDS -gt 520 ]; then echo "$n skipped at ${SECONDS}s"; return; fi
  if [ "$e" = - ]; then infer $n "$@"; else export "$e"; infer $n "$@"; unset "${e%%=*}"; fi
  kernels $n
}
run q05_nf4_old - $W/old/lorastudio-bench --model /tmp/q05 --quantize nf4 --prefill 64
run q05_nf4 - $B/lorastudio-bench --model /tmp/q05 --quantize nf4 --prefill 64
run q7_nf4_old - $W/old/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q7_nf4 - $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q7_bf16 - $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q7_bf16_r2 LORASTUDIO_MATVEC_ROUNDS=2 $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q7_nf4_r2 LORASTUDIO_MATVEC_ROUNDS=2 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q7_nf4_16 LORASTUDIO_QMATVEC=16 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q7_bf16_r4 LORASTUDIO_MATVEC_ROUNDS=4 $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q7_q8 - $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64
tar czf $OUT/s21a.tar.gz -C $OUT r && rm -rf $R
