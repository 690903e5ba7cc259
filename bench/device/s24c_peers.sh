#!/bin/bash
# Session 24, device call 3 (H200): the final decode (bursts of 8, the attention's combine in its last workgroup)
# beside llama.cpp's Vulkan build in the same call, 0.5B and 7B: ours `lorastudio-bench inference` (100 greedy
# tokens after 128), llama.cpp llama-batched-bench B1 (f16, flash attention, prompt 128, 100 new tokens; a warm-up
# run first). Binaries of call 2. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry, .gpu/llamacpp/pack.
source "$(dirname "$0")/common.sh"
LC=$PWD/.gpu/llamacpp/pack
make_models
L=/tmp/lcw; mkdir -p $L/convert
tar xJf $LC/bin.tar.xz -C $L && tar xJf $LC/convert.tar.xz -C $L/convert
lcb() {  # name, model: a warm-up run, then the measured one
  timeout 60 $L/bin/llama-batched-bench -m $2 -ngl 99 -fa 1 -c 4096 -b 2048 -ub 512 -npp 128 -ntg 16 -npl 1 > $R/$1_warm.txt 2>&1
  timeout 100 $L/bin/llama-batched-bench -m $2 -ngl 99 -fa 1 -c 4096 -b 2048 -ub 512 -npp 128 -ntg 100 -npl 1 > $R/$1.txt 2> $R/$1.err
  echo "$1 rc=$? at ${SECONDS}s"; grep -E "^\|" $R/$1.txt
}
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
infer q05 $B/lorastudio-bench --model /tmp/q05
PYTHONPATH=$L/convert/gguf-py timeout 200 python3 $L/convert/convert_hf_to_gguf.py /tmp/q05 --outtype f16 --outfile $L/q05-f16.gguf > $R/lc_convert05.txt 2>&1
lcb lc05 $L/q05-f16.gguf
infer q05_again $B/lorastudio-bench --model /tmp/q05
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
infer q7 $B/lorastudio-bench --model /tmp/q7
PYTHONPATH=$L/convert/gguf-py timeout 200 python3 $L/convert/convert_hf_to_gguf.py /tmp/q7 --outtype f16 --outfile $L/q7-f16.gguf > $R/lc_convert7.txt 2>&1
echo "llama.cpp 7B model rc=$? at ${SECONDS}s"
lcb lc7 $L/q7-f16.gguf
infer q7_again $B/lorastudio-bench --model /tmp/q7
tar czf $OUT/s24c.tar.gz -C $OUT r && rm -rf $R
