# docs/performance.png: time against size for xgrad and PyTorch, at 1 and 2 threads, with the time the
# machine's measured 1-thread limit allows. bench_docs.sh writes the data and calls:
#   gnuplot -e "dir='DATA_DIR'; out='PNG'; subtitle='CPU, cores, date'" plot_performance.gp
# Data files (DIR/<series>.dat): size, seconds for xgrad 1t, PyTorch 1t, xgrad 2t, PyTorch 2t, limit.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1560,600 font "sans,11" linewidth 1.5 noenhanced
} else {
    set terminal png size 1560,600 linewidth 2 noenhanced
}
set output out
set datafile missing "?"
set logscale x 2
set logscale y 10
set format y "%g"
set grid xtics ytics mytics lc rgb "#dddddd"
set key top left Left reverse noautotitle samplen 2.5 spacing 1.1 font ",10"
set ylabel "time per call (ms)"
set style line 1 lc rgb "#1f63b4" lw 2 pt 7 ps 0.9 dt 1
set style line 2 lc rgb "#e3741c" lw 2 pt 5 ps 0.9 dt 1
set style line 3 lc rgb "#1f63b4" lw 2 pt 6 ps 0.9 dt 2
set style line 4 lc rgb "#e3741c" lw 2 pt 4 ps 0.9 dt 2
set style line 5 lc rgb "#777777" lw 1.5 dt 3

set multiplot layout 1,3 title "xgrad vs PyTorch: time per call against size (log-log; lower is better)\n".subtitle

do for [panel = 1:3] {
    file = dir."/".word("layernorm_fwdbwd rmsnorm_fwdbwd matmul", panel).".dat"
    if (panel == 1) {
        set title "LayerNorm forward+backward, rows x 768\n(PyTorch: F.layer_norm)"
        set xlabel "rows"
        set xrange [200:21000]
        set xtics ("256" 256, "1K" 1024, "4K" 4096, "16K" 16384)
        lim = "DRAM limit, 1 thread"
    }
    if (panel == 2) {
        set title "RMSNorm forward+backward, rows x 768\n(PyTorch: x*rsqrt(x.pow(2).mean(-1)+eps)*w)"
    }
    if (panel == 3) {
        set title "matmul n x n . n x n\n(PyTorch: torch.matmul, OpenBLAS)"
        set xlabel "n"
        set xrange [52:2600]
        set xtics (64, 128, 256, 512, 1024, 2048)
        lim = "FMA peak, 1 thread"
    }
    plot file using 1:($2*1e3) with linespoints ls 1 title "xgrad, 1 thread", \
         file using 1:($3*1e3) with linespoints ls 2 title "PyTorch, 1 thread", \
         file using 1:($4*1e3) with linespoints ls 3 title "xgrad, 2 threads", \
         file using 1:($5*1e3) with linespoints ls 4 title "PyTorch, 2 threads", \
         file using 1:($6*1e3) with lines ls 5 title lim
}
unset multiplot
