#!/bin/bash
# Session 15, device call 5 (named nvidia-h100-x1): issue 21's 7B rows with this session's defaults beside the
# build of call 2 (.gpu/carry/old: 3340480) and both PyTorch+PEFT peers, on the same folder.
# Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry. Run: bash bench/device/s15e_7b_peers.sh
source "$(dirname "$0")/common.sh"
unpack_old_bench
cd .gpu/carry/peers
(timeout 200 python3 make_model.py /tmp/q7 $T --shape 7b > $R/make_model7.txt 2>&1; echo "make_model 7B rc=$?" >> $R/make_model7.txt) &
MK=$!
# While the 7B folder is written (CPU): the 0.5B B1 step again, as call 4's new build ran it 4.4 ms slower than the
# old one: old, new, new with the tile rule before (LORASTUDIO_CM2_SHORT_K=0), new again.
timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1
for v in old new short_k_off new2; do
  bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
  e=X=1; [ $v = short_k_off ] && e=LORASTUDIO_CM2_SHORT_K=0
  env $e timeout 40 $bin train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/train05_b1_$v.txt 2>&1
  echo "train 0.5B B1 $v rc=$? at ${SECONDS}s"; grep -E "tok/s" $R/train05_b1_$v.txt
done
wait $MK; tail -1 $R/make_model7.txt; echo "7B model at ${SECONDS}s"
for v in new old; do
  bin=$B/lorastudio-bench; [ $v = old ] && bin=$W/old/lorastudio-bench
  timeout 110 $bin train --model /tmp/q7 --batch 1 --seq 512 --steps 5 > $R/train7_$v.txt 2>&1
  echo "train 7B $v rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/train7_$v.txt
done
timeout 100 $B/lorastudio-bench inference --model /tmp/q7 > $R/infer7_new.txt 2>&1
echo "inference 7B new rc=$? at ${SECONDS}s"; grep -E "prefill|decode" $R/infer7_new.txt | head -2
timeout 120 python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro > $R/peer7_eager.txt 2>&1
echo "peer eager rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer7_eager.txt
left=$((585 - SECONDS)); [ $left -gt 30 ] && {
  timeout $left python3 torch_peft_bench.py --model /tmp/q7 --batch 1 --skip-micro --compile reduce-overhead > $R/peer7_compiled.txt 2>&1
  echo "peer compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer7_compiled.txt; }
tar czf $OUT/s15e.tar.gz -C $OUT r && rm -rf $R
