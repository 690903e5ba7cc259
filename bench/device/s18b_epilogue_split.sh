#!/bin/bash
# Session 18, device call 2: the GEMM's bias and LoRA terms as 16-wide tensor-core products (were element by
# element from global memory), the flash forward split over the keys (shaders/flash_combine.comp adds the
# partials), and the embedding table in system memory now that vk::Memory::host_apart sees the H100's heaps;
# against call 1's binary (.gpu/carry/old) with the old behaviour in the same call. GPU tests of every kernel
# touched; micro cases; 0.5B B1, B8, 7B B1 steps; prefill and decode.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s18b_epilogue_split.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
unpack_old_bench
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in attention_test matmul_test quantized_model_test architecture_forward_test generator_golden_test arch_golden_test training_test memory_plan_test; do
  timeout 120 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
done
timeout 60 $B/lorastudio-bench micro --filter lora_layer --iters 20 > $R/micro_lora.txt 2>&1
timeout 60 $W/old/lorastudio-bench micro --filter lora_layer --iters 20 > $R/micro_lora_old.txt 2>&1
grep -E "lora_layer" $R/micro_lora_old.txt $R/micro_lora.txt
for e in LORASTUDIO_FLASH_FORWARD_SPLITS=1 X=1; do
  env $e timeout 60 $B/lorastudio-bench micro --filter attention_ --iters 20 > $R/micro_attn_${e%%=*}.txt 2>&1
  echo "micro attention ($e)"; grep -E "^attention_" $R/micro_attn_${e%%=*}.txt
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
run b1_old2 $W/old/lorastudio-bench "$OLD" --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_2 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_nosplit $B/lorastudio-bench LORASTUDIO_FLASH_FORWARD_SPLITS=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8_old $W/old/lorastudio-bench "$OLD" --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8 $B/lorastudio-bench X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b_old $W/old/lorastudio-bench "$OLD" --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b $B/lorastudio-bench X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --trace $R/trace_7b.tsv
for m in q05 q7; do
  timeout 100 $W/old/lorastudio-bench inference --model /tmp/$m > $R/infer_${m}_old.txt 2>&1
  echo "inference $m old rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer_${m}_old.txt | head -2
  timeout 100 $B/lorastudio-bench inference --model /tmp/$m > $R/infer_$m.txt 2>&1
  echo "inference $m rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer_$m.txt | head -2
done
tar czf $OUT/s18b.tar.gz -C $OUT r && rm -rf $R
