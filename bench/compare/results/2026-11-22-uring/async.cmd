# 2026-11-22T06:28:36Z kernel 6.18.44-fc-v657, 2 cores, load 3.91 5.33 4.96
# build-perf/snapbuild/bench/mcpfan_ceiling --n 1000,10000 --rounds 10 --mode writev,uring-send,uring-send+async --iov 6
