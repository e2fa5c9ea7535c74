# 2026-11-22T06:36:06Z kernel 6.18.44-fc-v657, 2 cores, load 2.11 3.21 4.05
# build-perf/snapbuild/bench/mcpfan_ceiling --n 1000,10000 --rounds 10 --mode writev,uring-send+sqpoll+fixed,uring-send+fixed --iov 6
