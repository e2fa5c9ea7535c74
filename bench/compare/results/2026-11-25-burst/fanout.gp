set terminal pngcairo size 900,600 font 'sans,11'
set output 'fanout.png'
set title 'Burst: time from publish to the last delivery (median over reps; bars: min..max)'
set xlabel 'listen streams N'
set ylabel 'ms'
set logscale xy
set grid
set key top left
plot 'fanout.dat' u 1:2:3:4 w yerrorlines lw 2 pt 7 lc rgb '#1b9e77' t 'mcpfan', 'fanout.dat' u 1:5:6:7 w yerrorlines lw 2 pt 7 lc rgb '#d95f02' t 'nchan', 'fanout.dat' u 1:8:9:10 w yerrorlines lw 2 pt 7 lc rgb '#7570b3' t 'sdkhub', 'fanout.dat' u 1:11 w linespoints lw 2 dt 2 pt 6 lc rgb '#666666' t 'raw writev ceiling (1 core)'
