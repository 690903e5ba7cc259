#!/bin/bash
# Session 23, device call 3 (H200): the final build's batched generation (`lorastudio-bench inference --batches
# 1,4,16,32`) at the 0.5B and 7B shapes (bf16; nf4 at 7B) beside llama.cpp's Vulkan build (llama-batched-bench, f16,
# flash attention, prompt 128, 100 new tokens, B 1/4/16/32; run twice, the first as warm-up: its B1 row paid for the
# pipelines' compilation in call 1) in the same call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry, .gpu/llamacpp/pack. Run: bash bench/device/s23c_final.sh
source "$(dirname "$0")/common.sh"
LC=$PWD/.gpu/llamacpp/pack
make_models
L=/tmp/lcw; mkdir -p $L/convert
tar xJf $LC/bin.tar.xz -C $L && tar xJf $LC/convert.tar.xz -C $L/convert
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
echo "0.5B model at ${SECONDS}s"
bat() {  # name, args...: the batched lines of an inference run
  local n=$1; shift
  timeout 150 "$@" > $R/$n.txt 2>&1; echo "$n rc=$? at ${SECONDS}s"; grep -E "^batched|^decode|^prefill [0-9]" $R/$n.txt
}
lcb() {  # name, model: a warm-up run, then the measured one
  timeout 60 $L/bin/llama-batched-bench -m $2 -ngl 99 -fa 1 -c 8192 -b 2048 -ub 512 -npp 128 -ntg 16 -npl 1,32 > $R/$1_warm.txt 2>&1
  timeout 120 $L/bin/llama-batched-bench -m $2 -ngl 99 -fa 1 -c 8192 -b 2048 -ub 512 -npp 128 -ntg 100 -npl 1,4,16,32 > $R/$1.txt 2> $R/$1.err
  echo "$1 rc=$? at ${SECONDS}s"; grep -E "^\|" $R/$1.txt
}
bat q05 $B/lorastudio-bench inference --model /tmp/q05 --batches 1,4,16,32
PYTHONPATH=$L/convert/gguf-py timeout 200 python3 $L/convert/convert_hf_to_gguf.py /tmp/q05 --outtype f16 --outfile $L/q05-f16.gguf > $R/lc_convert05.txt 2>&1
echo "llama.cpp 0.5B model rc=$? at ${SECONDS}s"
lcb lc_batched05 $L/q05-f16.gguf
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
bat q7 $B/lorastudio-bench inference --model /tmp/q7 --batches 1,4,16,32
bat q7_nf4 $B/lorastudio-bench inference --model /tmp/q7 --quantize nf4 --batches 1,4,16,32
if [ $SECONDS -lt 400 ]; then
  PYTHONPATH=$L/convert/gguf-py timeout 150 python3 $L/convert/convert_hf_to_gguf.py /tmp/q7 --outtype f16 --outfile $L/q7-f16.gguf > $R/lc_convert7.txt 2>&1
  echo "llama.cpp 7B model rc=$? at ${SECONDS}s"
  [ $SECONDS -lt 500 ] && lcb lc_batched7 $L/q7-f16.gguf
fi
tar czf $OUT/s23c.tar.gz -C $OUT r && rm -rf $R
