set terminal pngcairo size 1100,480 font 'sans,10'
set output 'cost.png'
set multiplot layout 1,2 title 'Burst: server cost (median over reps)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set grid ytics
set key below horizontal
set xlabel 'listen streams N'
set title 'server CPU per delivery (µs)'
set yrange [0:*]
plot 'cost.dat' u 2:xtic(1) lc rgb '#1b9e77' t 'mcpfan', 'cost.dat' u 3:xtic(1) lc rgb '#d95f02' t 'nchan', 'cost.dat' u 4:xtic(1) lc rgb '#7570b3' t 'sdkhub', 'cost.dat' u 8 lc rgb '#666666' t 'ceiling: one writev'
set title 'server RSS per open stream (KiB)'
plot 'cost.dat' u 5:xtic(1) lc rgb '#1b9e77' t 'mcpfan', 'cost.dat' u 6:xtic(1) lc rgb '#d95f02' t 'nchan', 'cost.dat' u 7:xtic(1) lc rgb '#7570b3' t 'sdkhub'
unset multiplot
