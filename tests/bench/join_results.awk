# Joins bench_core's and bench_core.py's outputs (RESULT, GROUP and GOAL lines) into one table; the
# terminal table ends with the run's heap (run_bench.sh's MALLOC line) and the BLAS kernels each side ran
# (the `blas:` lines of both outputs, run_bench.sh's BLASENV line).
#
#   awk -v x=XGRAD.txt -v t=TORCH.txt -f join_results.awk               the terminal table, one run
#   awk -v fmt=md -v x=X1.txt -v t=T1.txt -v x2=X2.txt -v t2=T2.txt -f join_results.awk
#                                                 markdown tables per group, 1 and 2 threads side by side
#
# "xgrad ×" says how many times better xgrad is: PyTorch's time (or memory) over xgrad's, xgrad's rate
# over PyTorch's. "% limit" is a rate against the machine's limit measured by bench_core at the same
# thread count (GFLOP/s against limit_gflops, GB/s against limit_gbs, or against the group's own
# limit_gbs_<group> row where the group has one), for xgrad / for PyTorch.
# Goals (GOAL lines of bench_core) are checked against the medians: `limit` with % limit, `ratio`
# with xgrad ×, `scaling` with xgrad's 2-thread rate over its 1-thread rate (markdown only).
# Plain POSIX awk: Debian's default awk is mawk.

function load(file, run, is_xgrad,    line, f, n, key, i) {
    if (file == "") return
    while ((getline line < file) > 0) {
        n = split(line, f, " ")
        if (is_xgrad && f[1] == "GROUP") ncur = 0
        if (n >= 6 && f[1] == "RESULT") {
            key = run SUBSEP f[2]
            if (is_xgrad && f[2] ~ /^limit_gbs_/) {
                # the limit measured around this group: the group's GB/s rows so far compare with it
                for (i = 1; i <= ncur; i++) glim[run, cur[i]] = f[3]
            } else if (is_xgrad) cur[++ncur] = f[2]
            if (is_xgrad) {
                xm[key] = f[3]; xlo[key] = f[4]; xhi[key] = f[5]
                if (!(f[2] in unit)) { order[++rows] = f[2]; unit[f[2]] = f[6]; grp[f[2]] = groups }
            } else {
                tm[key] = f[3]; tlo[key] = f[4]; thi[key] = f[5]
            }
        } else if (is_xgrad && run == 1 && f[1] == "GROUP") {
            title[++groups] = substr(line, 7)
        } else if (is_xgrad && run == 1 && f[1] == "MALLOC") {
            malloc_note = substr(line, 8)
        } else if (is_xgrad && run == 1 && f[1] == "BLASENV") {
            blas_env = substr(line, 9)
        } else if (run == 1 && f[1] == "blas:" && n >= 3) {
            # "blas: OpenBLAS's CORE kernels (...)": the first one of each side
            if (is_xgrad && xblas == "") xblas = f[3]
            else if (!is_xgrad && tblas == "") tblas = f[3]
        } else if (is_xgrad && run == 1 && n >= 4 && f[1] == "GOAL") {
            ngoal[f[2]]++
            gkind[f[2], ngoal[f[2]]] = f[3]; gval[f[2], ngoal[f[2]]] = f[4]
        }
    }
    close(file)
}

function higher_better(u) { return u == "GB/s" || u == "GFLOP/s" || u == "steps/s" }
function lower_better(u) { return u == "us" || u == "ms" || u == "MiB" }
function is_limit_row(k) { return k ~ /^(fma_peak|dram_|cache_copy|fresh_pages|limit_)/ }

# xgrad's advantage in run r, or "" where it means nothing.
function ratio(r, k,    u) {
    u = unit[k]
    if (tm[r, k] == "" || xm[r, k] == "" || is_limit_row(k)) return ""
    if (higher_better(u) && tm[r, k] > 0) return xm[r, k] / tm[r, k]
    if (lower_better(u) && xm[r, k] > 0 && (u != "MiB" || (xm[r, k] >= 1 && tm[r, k] >= 1))) return tm[r, k] / xm[r, k]
    return ""
}

# Percent of the machine's limit of value v in run r, or "".
function pct(r, k, v,    u) {
    u = unit[k]
    if (v == "" || is_limit_row(k)) return ""
    if (u == "GFLOP/s" && xm[r, "limit_gflops"] > 0) return 100 * v / xm[r, "limit_gflops"]
    if (u == "GB/s" && ((r, k) in glim) && glim[r, k] > 0) return 100 * v / glim[r, k]
    if (u == "GB/s" && xm[r, "limit_gbs"] > 0) return 100 * v / xm[r, "limit_gbs"]
    return ""
}

# xgrad's (or PyTorch's) 2-thread speed-up over 1 thread, or "".
function scaling(k, xgrad,    a, b) {
    if (is_limit_row(k)) return ""
    a = xgrad ? xm[1, k] : tm[1, k]; b = xgrad ? xm[2, k] : tm[2, k]
    if (a == "" || b == "" || a <= 0 || b <= 0) return ""
    if (higher_better(unit[k])) return b / a
    if (lower_better(unit[k]) && unit[k] != "MiB") return a / b
    return ""
}

function num(v) { return v == "" ? "-" : sprintf("%.4g", v) }
function fixed2(v) { return v == "" ? "-" : sprintf("%.2f", v) }
function pnum(v) { return v == "" ? "-" : sprintf("%.0f", v) }
function spread(m, lo, hi) { return (lo == m && hi == m) ? sprintf("%.5g", m) : sprintf("%.4g [%.4g %.4g]", m, lo, hi) }
function yes(ok) { return ok ? "yes" : "no" }

# The goals of row k, each with whether run 1 (and run 2) meets it.
function goals(k, runs,    i, kind, v, s, out, r, part) {
    out = ""
    for (i = 1; i <= ngoal[k]; i++) {
        kind = gkind[k, i]; v = gval[k, i]; part = ""
        if (kind == "scaling") {
            if (runs < 2) continue
            s = scaling(k, 1)
            part = "2t/1t ≥ " v "×: " (s == "" ? "-" : yes(s >= v))
        } else {
            for (r = 1; r <= runs; r++) {
                s = kind == "limit" ? pct(r, k, xm[r, k]) : ratio(r, k)
                part = part (r > 1 ? " / " : "") (s == "" ? "-" : yes(s >= v))
            }
            if (kind == "limit") part = "≥ " v " % limit: " part
            else if (v == 1 && lower_better(unit[k])) part = "≤ PyTorch: " part
            else part = "≥ " v "× " (k ~ /_libtorch$/ ? "libtorch" : "PyTorch") ": " part
        }
        out = out (out == "" ? "" : "; ") part
    }
    return out
}

function text_table(    i, k, g, r, x, p, pt, lim, gl) {
    g = 0
    printf "%-27s %-8s %26s %26s %9s %14s  %s\n", "workload", "unit", "xgrad median [p10 p90]",
           "PyTorch median [p10 p90]", "xgrad ×", "% limit x / pt", "goal (met?)"
    for (i = 1; i <= rows; i++) {
        k = order[i]
        if (grp[k] != g) { g = grp[k]; printf "-- %s\n", title[g] }
        x = spread(xm[1, k], xlo[1, k], xhi[1, k])
        pt = tm[1, k] == "" ? "-" : spread(tm[1, k], tlo[1, k], thi[1, k])
        r = ratio(1, k)
        p = pct(1, k, xm[1, k])
        lim = p == "" ? "-" : pnum(p) " / " pnum(pct(1, k, tm[1, k]))
        gl = goals(k, 1)
        printf "%-27s %-8s %26s %26s %8s %14s  %s\n", k, unit[k], x, pt, r == "" ? "-" : sprintf("%.2f", r), lim, gl
    }
    if (malloc_note != "") printf "(heap: %s)\n", malloc_note
    if (xblas != "" || blas_env != "")
        printf "(BLAS: OpenBLAS's %s kernels for xgrad, %s for PyTorch; XGRAD_BENCH_BLAS=%s)%s\n",
               xblas == "" ? "?" : xblas, tblas == "" ? "-" : tblas, blas_env == "" ? "?" : blas_env,
               (tblas != "" && xblas != tblas) ? " DIFFERENT KERNELS: the GEMM rows compare them, not the libraries" : ""
}

function md_table(    i, k, g, r, cells, lim, p) {
    g = -1
    for (i = 1; i <= rows; i++) {
        k = order[i]
        if (k == "threads") continue
        if (grp[k] != g) {
            g = grp[k]
            printf "\n**%s**\n\n", title[g]
            print "| workload | unit | xgrad 1t | PyTorch 1t | xgrad × 1t | % limit 1t | xgrad 2t | PyTorch 2t | xgrad × 2t | % limit 2t | 2t/1t xgrad / PyTorch | goal, met at 1t / 2t |"
            print "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
        }
        cells = ""
        for (r = 1; r <= 2; r++) {
            p = pct(r, k, xm[r, k])
            lim = p == "" ? "-" : pnum(p) " / " pnum(pct(r, k, tm[r, k]))
            cells = cells " " num(xm[r, k]) " | " num(tm[r, k]) " | " (ratio(r, k) == "" ? "-" : sprintf("%.2f", ratio(r, k))) " | " lim " |"
        }
        p = scaling(k, 1)
        cells = cells " " (p == "" ? "-" : sprintf("%.2f / %s", p, fixed2(scaling(k, 0)))) " |"
        printf "| `%s` | %s |%s %s |\n", k, unit[k], cells, goals(k, 2)
    }
}

BEGIN {
    load(x, 1, 1); load(t, 1, 0); load(x2, 2, 1); load(t2, 2, 0)
    if (fmt == "md") md_table(); else text_table()
}
