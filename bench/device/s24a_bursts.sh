#!/bin/bash
# Session 24, device call 1 (H200): decode bursts (several tokens a submit, the sampled token fed to the next forward
# on the device: GeneratorOptions::burst, ops::decode_advance): GPU tests; decode at 0.5B, 7B and 7B nf4 with the
# default burst of 8 beside LORASTUDIO_DECODE_BURST=1 (one token a submit, as before) and 16, same binary, same call;
# llama.cpp's Vulkan build at B1 (llama-batched-bench, f16, flash attention, prompt 128, 100 new tokens) beside.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry, .gpu/llamacpp/pack. Run: bash bench/device/s24a_bursts.sh
source "$(dirname "$0")/common.sh"
LC=$PWD/.gpu/llamacpp/pack
link_source_dir
make_models
L=/tmp/lcw; mkdir -p $L/convert
tar xJf $LC/bin.tar.xz -C $L && tar xJf $LC/convert.tar.xz -C $L/convert
LS_TEST_NO_VALIDATION=1 gpu_tests generator_golden_test sample_test batch_generator_test eval_set_test quantized_model_test arch_golden_test
lcb() {  # name, model: a warm-up run, then the measured one
  timeout 60 $L/bin/llama-batched-bench -m $2 -ngl 99 -fa 1 -c 4096 -b 2048 -ub 512 -npp 128 -ntg 16 -npl 1 > $R/$1_warm.txt 2>&1
  timeout 100 $L/bin/llama-batched-bench -m $2 -ngl 99 -fa 1 -c 4096 -b 2048 -ub 512 -npp 128 -ntg 100 -npl 1 > $R/$1.txt 2> $R/$1.err
  echo "$1 rc=$? at ${SECONDS}s"; grep -E "^\|" $R/$1.txt
}
until grep -q '^saved' $R/make_model05.txt 2>/dev/null || [ $SECONDS -gt 150 ]; do sleep 2; done
echo "0.5B model at ${SECONDS}s"
infer q05_b8 $B/lorastudio-bench --model /tmp/q05
LORASTUDIO_DECODE_BURST=1 infer q05_b1 $B/lorastudio-bench --model /tmp/q05
LORASTUDIO_DECODE_BURST=16 infer q05_b16 $B/lorastudio-bench --model /tmp/q05
infer q05_b8_again $B/lorastudio-bench --model /tmp/q05
PYTHONPATH=$L/convert/gguf-py timeout 200 python3 $L/convert/convert_hf_to_gguf.py /tmp/q05 --outtype f16 --outfile $L/q05-f16.gguf > $R/lc_convert05.txt 2>&1
echo "llama.cpp 0.5B model rc=$? at ${SECONDS}s"
lcb lc05 $L/q05-f16.gguf
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
infer q7_b8 $B/lorastudio-bench --model /tmp/q7
LORASTUDIO_DECODE_BURST=1 infer q7_b1 $B/lorastudio-bench --model /tmp/q7
infer q7nf4_b8 $B/lorastudio-bench --model /tmp/q7 --quantize nf4
LORASTUDIO_DECODE_BURST=1 infer q7nf4_b1 $B/lorastudio-bench --model /tmp/q7 --quantize nf4
tar czf $OUT/s24a.tar.gz -C $OUT r && rm -rf $R
