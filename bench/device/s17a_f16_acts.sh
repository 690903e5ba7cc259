#!/bin/bash
# Session 17, device call 1: training's activations in f16 (model/layer_acts.h F16Operands normed and attention)
# against the same binary with LORASTUDIO_F16_ACTS=0 (f32 as before), at 0.5B B1, B8 and 7B B1: step time,
# memory held, losses. GPU tests of the change (attention_test with its f16 backward on cooperative-matrix-2,
# training_test, matmul_test, layer_acts_test, memory_plan_test). Gemma 3's tokenizer ids from HF `tokenizers`
# (tests/fixtures/make_tokenizer_fixtures.py, .gpu/carry/toks.tar.xz = .cache/tokenizers), then the 0.5B peers.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s17a_f16_acts.sh
source "$(dirname "$0")/common.sh"
export LS_TEST_NO_VALIDATION=1
link_source_dir
mkdir -p .cache && tar xJf .gpu/carry/toks.tar.xz -C .cache
(python3 -c "import tokenizers; print('tokenizers', tokenizers.__version__)"; timeout 200 python3 tests/fixtures/make_tokenizer_fixtures.py; echo "rc=$?"; cp tests/fixtures/tokenizer_ids.json $R/) > $R/tokenizer_fixtures.txt 2>&1 &
P=$PWD/.gpu/carry/peers
(cd $P && python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1 && python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "models rc=$?" >> $R/make_model7.txt) &
MK=$!
for t in attention_test training_test matmul_test layer_acts_test memory_plan_test; do
  timeout 150 $B/$t > $R/$t.txt 2>&1; echo "$t rc=$? at ${SECONDS}s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/$t.txt | head -6
done
grep -E "measured\] (loss f32|worst gradient)" $R/training_test.txt
grep -E "attention_backward f16" $R/attention_test.txt | head -12
wait $MK; tail -1 $R/make_model7.txt; echo "models at ${SECONDS}s"
run() {  # name, env, args...
  local n=$1 e=$2; shift 2
  env $e timeout 100 $B/lorastudio-bench train "$@" > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held|loss" $R/$n.txt | head -4
}
run b1_new X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_off LORASTUDIO_F16_ACTS=0 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b1_new2 X=1 --model /tmp/q05 --batch 1 --seq 512 --steps 9
run b8_new X=1 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run b8_off LORASTUDIO_F16_ACTS=0 --model /tmp/q05 --batch 8 --seq 512 --steps 5
run 7b_new X=1 --model /tmp/q7 --batch 1 --seq 512 --steps 5
run 7b_off LORASTUDIO_F16_ACTS=0 --model /tmp/q7 --batch 1 --seq 512 --steps 5
cat $R/tokenizer_fixtures.txt | tail -5
cd $P
left=$((580 - SECONDS)); [ $left -gt 60 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q05 --batch 1 --skip-micro > $R/peer05_eager.txt 2>&1
  echo "peer eager rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_eager.txt; }
left=$((585 - SECONDS)); [ $left -gt 60 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q05 --batch 1 --skip-micro --compile reduce-overhead > $R/peer05_compiled.txt 2>&1
  echo "peer compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_compiled.txt; }
tar czf $OUT/s17a.tar.gz -C $OUT r && rm -rf $R
