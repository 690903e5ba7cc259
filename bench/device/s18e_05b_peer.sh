#!/bin/bash
# Session 18, device call 5: the 0.5B B1 row of the final build beside the compiled PyTorch peer in the same call
# (call 4 had time for the 7B peer only). Carry .gpu/env.sh, .gpu/debs, .gpu/extra-debs, .gpu/carry.
# Run: bash bench/device/s18e_05b_peer.sh
source "$(dirname "$0")/common.sh"
P=$PWD/.gpu/carry/peers
(cd $P && timeout 60 python3 make_model.py /tmp/q05 $T > $R/make_model05.txt 2>&1; echo "model rc=$?" >> $R/make_model05.txt)
tail -1 $R/make_model05.txt
for n in b1 b1_2; do
  timeout 40 $B/lorastudio-bench train --model /tmp/q05 --batch 1 --seq 512 --steps 9 > $R/$n.txt 2>&1
  echo "$n rc=$? at ${SECONDS}s"; grep -E "tok/s|memory held" $R/$n.txt | head -2
done
cd $P
timeout $((265 - SECONDS)) python3 torch_peft_bench.py --model /tmp/q05 --batch 1 --skip-micro --compile reduce-overhead > $R/peer05_compiled.txt 2>&1
echo "peer 0.5B compiled rc=$? at ${SECONDS}s"; grep -E "train_|prefill|memory" $R/peer05_compiled.txt
cd - > /dev/null
tar czf $OUT/s18e.tar.gz -C $OUT r && rm -rf $R
