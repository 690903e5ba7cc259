#!/bin/bash
# Session 21, device call 3 (H200): the few-row products' loops over rows run to the constant kMaxRows (acc indexed
# by constants: in registers, not local memory): matvec8, the norm-fused kernels (plain, gated, q/k/v) and the
# packed ones. GPU tests; the decode micro cases; decode at 0.5B and 7B (bf16, nf4, q8) beside session 19's build.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s21c_constant_rows.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
make_models
gpu_tests matmul_test matvec_norm_test quant_op_test quantized_model_test generator_golden_test arch_golden_test
micro() {
  timeout 100 $B/lorastudio-bench micro --filter decode > $R/$1.txt 2>&1
  echo "== $1 rc=$? at ${SECONDS}s"; grep -E "^decode" $R/$1.txt | awk '{printf "  %-24s %9s us %8s GB/s\n", $1, $(NF-3), $NF}'
}
micro micro1
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
kernels() { grep -E "qmatvec|matvec_norm|matvec8|  mlp|  attention  " $R/$1.txt | head -9; }
run() { infer "$@"; kernels $1; }
run q05_old $W/old/lorastudio-bench --model /tmp/q05 --prefill 64
run q05 $B/lorastudio-bench --model /tmp/q05 --prefill 64
run q7_old $W/old/lorastudio-bench --model /tmp/q7 --prefill 64
run q7 $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q7_nf4 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q05_nf4 $B/lorastudio-bench --model /tmp/q05 --quantize nf4 --prefill 64
[ $SECONDS -lt 470 ] && run q7_q8 $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64
[ $SECONDS -lt 520 ] && run q7_2 $B/lorastudio-bench --model /tmp/q7 --prefill 64
tar czf $OUT/s21c.tar.gz -C $OUT r && rm -rf $R
