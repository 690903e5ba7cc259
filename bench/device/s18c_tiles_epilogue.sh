#!/bin/bash
# Session 18, device call 3: the GEMM epilogue's bias and LoRA terms as K steps of the tile's own shapes (call 2's
# 16-wide steps gave NaN at 0.5B B8, the 128×128 tile), matmul_test with a LoRA case on that tile; the flash
# forward split only below 132 workgroups; K steps of 128 (tiles hk, mk, forced with LORASTUDIO_CM2_TILE) in
# micro and in whole steps (slower everywhere: removed after this call); against call 1's binary
# (.gpu/carry/old) with the old behaviour.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s18c_tiles_epilogue.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in matmul_test attention_test quantized_model_test generator_golden_test arch_golden_test training_test memory_plan_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
done
for tile in default hk mk; do
  env LORASTUDIO_CM2_TILE=$([ $tile = default ] || echo $tile) timeout 90 $B/lorastudio-bench micro --filter train16 --iters 10 > $R/micro_$tile.txt 2>&1
  echo "micro train16 tile $tile rc=$?"; grep -E "^train16" $R/micro_$tile.txt | awk '{printf "  %-34s %10s us %10s GFLOP/s\n", $1, $(NF-3), $(NF-1)}'
done
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
OLD="LORASTUDIO_EMBED_ON_GPU=1 LORASTUDIO_LOGIT_MIB=256"
run() {  # name, binary, env, args...
  local n=$1 bin=$2 e=$3; shift 3
  env $e timeout 100 $bin train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -3
}
run b1_old $W/old/lorastudio-bench "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9 --trace $R/trace_b1.tsv
run b1_hk $B/lorastudio-bench LORASTUDIO_CM2_TILE=hk --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_2 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8_old $W/old/lorastudio-bench "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8_mk $B/lorastudio-bench LORASTUDIO_CM2_TILE=mk --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b_old $W/old/lorastudio-bench "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b $B/lorastudio-bench X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
run 7b_hk $B/lorastudio-bench LORASTUDIO_CM2_TILE=hk --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b_mk $B/lorastudio-bench LORASTUDIO_CM2_TILE=mk --model /tmp/q7 --batch 1 --seq 512 --steps 5
tar czf $OUT/s18c.tar.gz -C $OUT r && rm -rf $R
