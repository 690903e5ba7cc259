#!/bin/bash
# Session 10 (prepared, not yet run: this session had no device time): QLoRA on the H100 (issue 23).
# 1. quant_op_test and quantized_model_test on the GPU (the f16 scratch weight on tensor cores);
# 2. the 7B shape (make_model.py --shape 7b): training B1×T512 and inference with the bf16 base, nf4 and q8,
#    each printing tok/s and the device memory held, so the ratios come from one call.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry (bins.tar.xz with lorastudio-bench and the two
# test binaries, peers/, tok/). Run: bash bench/device/s10a_qlora.sh
source "$(dirname "$0")/common.sh"
export VK_LAYER_PATH=$PWD/.gpu/root/usr/share/vulkan/explicit_layer.d LS_TEST_NO_VALIDATION=1
link_source_dir
for t in quant_op_test quantized_model_test; do
  timeout 60 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; tail -1 $R/$t.txt
done
cd .gpu/carry/peers
timeout 240 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model.txt 2>&1; echo "make_model rc=$? at ${SECONDS}s"
for q in none nf4 q8; do
  timeout 150 $B/lorastudio-bench train --model /tmp/q7 --batch 1 --seq 512 --steps 5 --quantize $q > $R/train7b_$q.txt 2>&1
  echo "train 7B $q rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7b_$q.txt
  timeout 90 $B/lorastudio-bench inference --model /tmp/q7 --quantize $q > $R/inference7b_$q.txt 2>&1
  echo "inference 7B $q rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/inference7b_$q.txt | head -3
done
tar czf $OUT/s10a.tar.gz -C $OUT r && rm -rf $R
