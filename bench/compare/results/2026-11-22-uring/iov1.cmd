# 2026-11-22T06:23:19Z kernel 6.18.44-fc-v657, 2 cores, load 4.04 5.06 4.62
# build-perf/snapbuild/bench/mcpfan_ceiling --n 1000,10000 --rounds 20 --mode writev,sendmsg,send,uring-writev,uring-send --iov 1
