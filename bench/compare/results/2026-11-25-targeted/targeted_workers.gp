set terminal pngcairo size 700,480 font 'sans,10'
set output 'targeted_workers.png'
set title 'mcpfan: server CPU per targeted publish against --workers (median over reps)'
set grid
set key top left
set logscale x 2
set xrange [0.8:10.0]
set xtics ("1" 1, "2" 2, "4" 4, "8" 8)
set xlabel 'worker loops'
set ylabel 'µs per publish'
set yrange [0:*]
plot 'targeted_workers.dat' u 1:2 w linespoints lw 2 pt 7 lc rgb '#1b9e77' t '8000' . ('8000' eq 'max' ? '' : '/s'), 'targeted_workers.dat' u 1:3 w linespoints lw 2 pt 7 lc rgb '#e7298a' t 'max' . ('max' eq 'max' ? '' : '/s')
