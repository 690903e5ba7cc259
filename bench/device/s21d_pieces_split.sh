#!/bin/bash
# Session 21, device call 4 (H200): the packed few-row product as pieces (shaders/quant_matvec8.comp, constant row
# indices) against the 16-byte kernel (LORASTUDIO_QMATVEC=16) for o and down of a quantized base; the column split's
# target of workgroups (LORASTUDIO_MATVEC_MIN_GROUPS: 264 now) for the few-column products (o, down, q/k/v).
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s21d_pieces_split.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
make_models
gpu_tests quant_op_test matvec_norm_test quantized_model_test generator_golden_test
LORASTUDIO_QMATVEC=16 gpu_tests quant_op_test
LORASTUDIO_MATVEC_MIN_GROUPS=2112 gpu_tests matmul_test matvec_norm_test
micro() {  # name, env...
  local n=$1; shift
  env "$@" timeout 100 $B/lorastudio-bench micro --filter decode > $R/$n.txt 2>&1
  echo "== $n ($*) rc=$? at ${SECONDS}s"; grep -E "^decode" $R/$n.txt | awk '{printf "  %-24s %9s us %8s GB/s\n", $1, $(NF-3), $NF}'
}
micro micro_pieces
micro micro_16 LORASTUDIO_QMATVEC=16
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
kernels() { grep -E "qmatvec|matvec_norm|matvec8|  mlp|  attention  " $R/$1.txt | head -9; }
run() {  # name, env assignment or -, args...
  local n=$1 e=$2; shift 2
  if [ $SECONDS -gt 540 ]; then echo "$n skipped at ${SECONDS}s"; return; fi
  if [ "$e" = - ]; then infer $n "$@"; else export "$e"; infer $n "$@"; unset "${e%%=*}"; fi
  kernels $n
}
run q7_nf4 - $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q7_nf4_16 LORASTUDIO_QMATVEC=16 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q7 - $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q7_g1056 LORASTUDIO_MATVEC_MIN_GROUPS=1056 $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q05 - $B/lorastudio-bench --model /tmp/q05 --prefill 64
run q05_g1056 LORASTUDIO_MATVEC_MIN_GROUPS=1056 $B/lorastudio-bench --model /tmp/q05 --prefill 64
run q05_g2112 LORASTUDIO_MATVEC_MIN_GROUPS=2112 $B/lorastudio-bench --model /tmp/q05 --prefill 64
run q7_g2112 LORASTUDIO_MATVEC_MIN_GROUPS=2112 $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q7_q8 - $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64
run q7_2 - $B/lorastudio-bench --model /tmp/q7 --prefill 64
tar czf $OUT/s21d.tar.gz -C $OUT r && rm -rf $R
