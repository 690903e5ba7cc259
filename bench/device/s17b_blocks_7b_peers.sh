#!/bin/bash
# Session 17, device call 2: shared memory blocks of 64 MiB (were 256; vk/memory.h kBlockSize) with call 1's f16
# activations: memory held at 0.5B B1, B8 and 7B B1 (and 7B with --grad-checkpoint); GPU tests of the allocator
# (device_test's memory cases, memory_plan_test: plan against the allocator's peak); the 7B peers in the same call;
# the prefill and decode rows.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s17b_blocks_7b_peers.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
timeout 60 $B/device_test --gtest_filter='DeviceMemory*' > $R/device_test.txt 2>&1; echo "device_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) " $R/device_test.txt
timeout 150 $B/memory_plan_test > $R/memory_plan_test.txt 2>&1; echo "memory_plan_test rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) " $R/memory_plan_test.txt
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
run() {  # name, env, args...
  local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -3
}
run b1 X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_f32acts LORASTUDIO_F16_ACTS=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8 X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b_ckpt X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5 --grad-checkpoint
timeout 60 $B/lorastudio-bench inference --model /tmp/q05 > $R/infer05.txt 2>&1
echo "inference 0.5B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer05.txt | head -3
timeout 100 $B/lorastudio-bench inference --model /tmp/q7 > $R/infer7.txt 2>&1
echo "inference 7B rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer7.txt | head -3
cd $P
timeout 150 python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro > $R/peer7_eager.txt 2>&1
echo "peer eager rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer7_eager.txt
left=$((585 - SECONDS)); [ $left -gt 60 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro --compile reduce-overhead > $R/peer7_compiled.txt 2>&1
  echo "peer compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer7_compiled.txt; }
tar czf $OUT/s17b.tar.gz -C $OUT r && rm -rf $R
