#!/bin/bash
# Session 20, device call 4 (H200): the final decode build (norms folded into the products, q/k/v with RoPE and the
# cache write in one pass, few-row products split over subgroups without call 3's two pieces in flight, the split
# attention's 16-byte partial pass), beside session 19's final build (cd3a8a0, .gpu/carry/old), this build with
# LORASTUDIO_MATVEC_SPLIT=1, and llama.cpp's Vulkan build (tg100 at depth 128, greedy_bench) at the 0.5B shape, all in
# the same call. GPU tests first.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry, .gpu/llamacpp/pack. Run: bash bench/device/s20d_decode_final.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
LC=$PWD/.gpu/llamacpp/pack
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > $R/gpu.txt 2>&1; cat $R/gpu.txt
make_models
gpu_tests matvec_norm_test generator_golden_test arch_golden_test quantized_model_test matmul_test attention_test training_test
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
infer infer_q05_old $W/old/lorastudio-bench --model /tmp/q05
infer infer_q05 $B/lorastudio-bench --model /tmp/q05
LORASTUDIO_MATVEC_SPLIT=1 infer infer_q05_split1 $B/lorastudio-bench --model /tmp/q05
infer infer_q05_2 $B/lorastudio-bench --model /tmp/q05
infer infer_q7_old $W/old/lorastudio-bench --model /tmp/q7
infer infer_q7 $B/lorastudio-bench --model /tmp/q7
infer infer_q7_2 $B/lorastudio-bench --model /tmp/q7
infer infer_q7_nf4 $B/lorastudio-bench --model /tmp/q7 --quantize nf4
timeout 60 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/b1.txt 2>&1
echo "b1 rc=$?"; grep -E "tok/s|memory held" $R/b1.txt | head -2
# llama.cpp (../shared/peers/llamacpp/device_run.sh's steps, f16 with flash attention only)
L=/tmp/lcw; mkdir -p $L/convert
tar xJf $LC/bin.tar.xz -C $L && tar xJf $LC/tok.tar.xz -C $L && tar xJf $LC/convert.tar.xz -C $L/convert
timeout 180 python3 $LC/save_model.py $L/model $L/tok bfloat16 > $R/lc_model.txt 2>&1
PYTHONPATH=$L/convert/gguf-py timeout 200 python3 $L/convert/convert_hf_to_gguf.py $L/model --outtype f16 --outfile $L/q05-f16.gguf > $R/lc_convert.txt 2>&1
echo "llama.cpp model rc=$? at ${SECONDS}s"
timeout 100 $L/bin/llama-bench -m $L/q05-f16.gguf -ngl 99 -fa 1 -p 0 -n 100 -d 128 -r 10 > $R/lc_tg100.txt 2> $R/lc_tg100.err
echo "llama-bench rc=$?"; grep -E "tg100|model" $R/lc_tg100.txt
timeout 60 $L/bin/greedy_bench $L/q05-f16.gguf 1 128 100 512 10 > $R/lc_greedy.json 2> $R/lc_greedy.err
echo "greedy_bench rc=$?"; cat $R/lc_greedy.json
tar czf $OUT/s20d.tar.gz -C $OUT r && rm -rf $R
