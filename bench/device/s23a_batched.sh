#!/bin/bash
# Session 23, device call 1 (H200): batched generation (infer::BatchGenerator, `generate --prompts`): GPU tests, then
# `lorastudio-bench inference --batches 1,4,16` at the 0.5B and 7B shapes (bf16, and nf4 at 7B), beside llama.cpp's
# Vulkan build running llama-batched-bench (built from the llama.cpp bundle's tools/batched-bench against the same
# prebuilt libraries as llama-bench) at the same B, prompt 128 and 100 new tokens, in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry, .gpu/llamacpp/pack. Run: bash bench/device/s23a_batched.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
LC=$PWD/.gpu/llamacpp/pack
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $R/gpu.txt 2>&1; cat $R/gpu.txt
make_models
gpu_tests batch_generator_test rope_test attention_test generator_golden_test matvec_norm_test
L=/tmp/lcw; mkdir -p $L/convert
tar xJf $LC/bin.tar.xz -C $L && tar xJf $LC/convert.tar.xz -C $L/convert
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
echo "0.5B model at ${SECONDS}s"
infer infer_q05 $B/lorastudio-bench --model /tmp/q05 --batches 1,4,16
grep -E "^batched" $R/infer_q05.txt
PYTHONPATH=$L/convert/gguf-py timeout 200 python3 $L/convert/convert_hf_to_gguf.py /tmp/q05 --outtype f16 --outfile $L/q05-f16.gguf > $R/lc_convert05.txt 2>&1
echo "llama.cpp 0.5B model rc=$? at ${SECONDS}s"
lcb() {  # name, model
  timeout 120 $L/bin/llama-batched-bench -m $2 -ngl 99 -fa 1 -c 4096 -b 2048 -ub 512 -npp 128 -ntg 100 -npl 1,4,16 > $R/$1.txt 2> $R/$1.err
  echo "$1 rc=$? at ${SECONDS}s"; grep -E "^\|" $R/$1.txt
}
lcb lc_batched05 $L/q05-f16.gguf
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
infer infer_q7 $B/lorastudio-bench --model /tmp/q7 --batches 1,4,16
grep -E "^batched" $R/infer_q7.txt
infer infer_q7_nf4 $B/lorastudio-bench --model /tmp/q7 --quantize nf4 --batches 1,4,16
grep -E "^batched" $R/infer_q7_nf4.txt
if [ $SECONDS -lt 380 ]; then
  PYTHONPATH=$L/convert/gguf-py timeout 150 python3 $L/convert/convert_hf_to_gguf.py /tmp/q7 --outtype f16 --outfile $L/q7-f16.gguf > $R/lc_convert7.txt 2>&1
  echo "llama.cpp 7B model rc=$? at ${SECONDS}s"
  [ $SECONDS -lt 480 ] && lcb lc_batched7 $L/q7-f16.gguf
fi
tar czf $OUT/s23a.tar.gz -C $OUT r && rm -rf $R
