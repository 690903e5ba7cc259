#!/bin/bash
# Session 16, device call 3 (named nvidia-h100-x1): issue 23's 14B shape (hidden 5120, 48 layers, 40/8 heads, MLP
# 13824, vocab 152064; bench/make_shape_model.py --shape 14b, drawn on the GPU), B1×T512 r8 q,v: nf4, bf16 and nf4
# with --grad-checkpoint, each with tok/s, memory held and load time (weights now converted on all cores); then
# nf4 inference. Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s16c_14b.sh
source "$(dirname "$0")/common.sh"
timeout 300 python3 bench/make_shape_model.py /tmp/q14 $T --shape 14b --device cuda > $R/make14.txt 2>&1
echo "make 14B rc=$? at ${SECONDS}s"; tail -2 $R/make14.txt; df -h /tmp | tail -1
run14() {  # name, extra options
  local left=$((585 - SECONDS)); [ $left -gt 40 ] || { echo "skip $1: ${left}s left"; return; }
  timeout $((left < 150 ? left : 150)) $B/lorastudio-bench train --model /tmp/q14 --batch 1 --seq 512 --steps 3 "${@:2}" > $R/train14_$1.txt 2>&1
  echo "train 14B $1 rc=$? at ${SECONDS}s"; grep -E "loaded|tok/s|memory held" $R/train14_$1.txt | head -4
}
run14 nf4 --quantize nf4
run14 bf16
run14 nf4_ckpt --quantize nf4 --grad-checkpoint
left=$((585 - SECONDS)); [ $left -gt 40 ] && {
  timeout $left $B/lorastudio-bench inference --model /tmp/q14 --quantize nf4 --new-tokens 50 > $R/infer14_nf4.txt 2>&1
  echo "inference 14B nf4 rc=$? at ${SECONDS}s"; grep -E "loaded|prefill|decode" $R/infer14_nf4.txt | head -4; }
tar czf $OUT/s16c.tar.gz -C $OUT r && rm -rf $R
