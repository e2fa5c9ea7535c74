set terminal pngcairo size 1100,480 font 'sans,10'
set output 'targeted_rate.png'
set multiplot layout 1,2 title 'Targeted publishes: cost and latency against the publish rate (median over reps)'
set grid
set key top right
set xlabel 'publishes/s asked (max: as fast as the server answers)'
set xrange [-0.3:3.3]
set title 'server CPU per publish (µs, log scale)'
set logscale y
set yrange [*:*]
plot 'targeted_rate.dat' u 1:3:xtic(2) w linespoints lw 2 pt 7 lc rgb '#1b9e77' t 'mcpfan', 'targeted_rate.dat' u 1:5:xtic(2) w linespoints lw 2 pt 7 lc rgb '#d95f02' t 'nchan', 'targeted_rate.dat' u 1:7:xtic(2) w linespoints lw 2 pt 7 lc rgb '#7570b3' t 'sdkhub'
set title 'publish → delivery p99 (ms)'
set logscale y
set yrange [*:*]
plot 'targeted_rate.dat' u 1:4:xtic(2) w linespoints lw 2 pt 7 lc rgb '#1b9e77' t 'mcpfan', 'targeted_rate.dat' u 1:6:xtic(2) w linespoints lw 2 pt 7 lc rgb '#d95f02' t 'nchan', 'targeted_rate.dat' u 1:8:xtic(2) w linespoints lw 2 pt 7 lc rgb '#7570b3' t 'sdkhub'
unset multiplot
