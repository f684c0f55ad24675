// The benches' output protocol (RESULT, GROUP and GOAL lines, read by join_results.awk), the
// quantiles behind it and the clocks they read, shared by bench_core, bench_cuda and bench_libtorch.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace bench {

/// Quantiles of a sample, in the sample's unit.
struct Stats {
    double median, p10, p90;
};

/// What times a measurement: wall time, or CPU time (which time spent descheduled, while other
/// processes share the cores, does not inflate) of this thread or of the whole process.
enum class Timer { kWall, kThreadCpu, kProcessCpu };

/// Seconds on `timer`'s clock, from an arbitrary start.
inline double now_seconds(Timer timer) {
    if (timer == Timer::kWall)
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    timespec ts{};
    clock_gettime(timer == Timer::kThreadCpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline Stats stats_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)]; };
    return {at(0.5), at(0.1), at(0.9)};
}

inline void result(const std::string& name, Stats s, const char* unit) {
    std::printf("RESULT %s %.6g %.6g %.6g %s\n", name.c_str(), s.median, s.p10, s.p90, unit);
    std::fflush(stdout);
}

inline void result(const std::string& name, double value, const char* unit) {
    result(name, {value, value, value}, unit);
}

inline void group(const char* title) {
    std::printf("GROUP %s\n", title);
}

inline void goal(const std::string& name, const char* kind, double value) {
    std::printf("GOAL %s %s %g\n", name.c_str(), kind, value);
}

/// Reports seconds-per-call samples as a rate `work / seconds` (bytes or flops, scaled by `scale`);
/// returns the rate's quantiles (p10 is the slow end).
inline Stats report_rate(const std::string& name, const std::vector<double>& seconds, double work, double scale,
                         const char* unit) {
    Stats t = stats_of(seconds);
    Stats r{work / t.median / scale, work / t.p90 / scale, work / t.p10 / scale};
    std::printf("%-26s %10.2f %-8s (p10 %.2f, p90 %.2f; median %.3f ms, %zu reps)\n", name.c_str(), r.median, unit,
                r.p10, r.p90, t.median * 1e3, seconds.size());
    result(name, r, unit);
    return r;
}

}  // namespace bench
