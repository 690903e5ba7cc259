#!/bin/bash
# Session 21, device call 5 (H200): the session's final build (the packed products norm-fused and as pieces, constant
# row indices) beside session 19's (cd3a8a0) in one call: GPU tests; decode at 0.5B and 7B with bf16, nf4 and q8
# bases; llama.cpp's Vulkan tg100 at depth 128 on the 0.5B shape if time is left.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry, .gpu/llamacpp/pack. Run: bash bench/device/s21e_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
LC=$PWD/.gpu/llamacpp/pack
make_models
gpu_tests quant_op_test matvec_norm_test quantized_model_test generator_golden_test
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
kernels() { grep -E "qmatvec|matvec_norm|matvec8|  mlp|  attention  " $R/$1.txt | head -9; }
run() { if [ $SECONDS -gt 330 ]; then echo "$1 skipped at ${SECONDS}s"; return; fi; infer "$@"; kernels $1; }
run q05_old $W/old/lorastudio-bench --model /tmp/q05 --prefill 64
run q05 $B/lorastudio-bench --model /tmp/q05 --prefill 64
run q05_nf4 $B/lorastudio-bench --model /tmp/q05 --quantize nf4 --prefill 64
run q7_old $W/old/lorastudio-bench --model /tmp/q7 --prefill 64
run q7 $B/lorastudio-bench --model /tmp/q7 --prefill 64
run q7_nf4 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
run q7_q8 $B/lorastudio-bench --model /tmp/q7 --quantize q8 --prefill 64
run q7_nf4_old $W/old/lorastudio-bench --model /tmp/q7 --quantize nf4 --prefill 64
if [ $SECONDS -lt 300 ]; then
  L=/tmp/lcw; mkdir -p $L/convert
  tar xJf $LC/bin.tar.xz -C $L && tar xJf $LC/tok.tar.xz -C $L && tar xJf $LC/convert.tar.xz -C $L/convert
  timeout 60 python3 $LC/save_model.py $L/model $L/tok bfloat16 > $R/lc_model.txt 2>&1
  PYTHONPATH=$L/convert/gguf-py timeout 60 python3 $L/convert/convert_hf_to_gguf.py $L/model --outtype f16 --outfile $L/q05-f16.gguf > $R/lc_convert.txt 2>&1
  echo "llama.cpp model rc=$? at ${SECONDS}s"
  timeout 60 $L/bin/llama-bench -m $L/q05-f16.gguf -ngl 99 -fa 1 -p 0 -n 100 -d 128 -r 10 > $R/lc_tg100.txt 2> $R/lc_tg100.err
  echo "llama-bench rc=$? at ${SECONDS}s"; grep -E "tg100|model" $R/lc_tg100.txt
fi
tar czf $OUT/s21e.tar.gz -C $OUT r && rm -rf $R
