//! What the benchmarks read of a process from Linux's `/proc`: its memory (`VmHWM`, `VmRSS`),
//! its state and CPU time, and the machine's load average.

use std::time::Duration;

/// `/proc` clock ticks per second (USER_HZ: 100 on Linux).
pub const TICKS_PER_SECOND: u64 = 100;

/// A `kB` field of `/proc/PID/status` (`"VmHWM:"`: the peak RSS, `"VmRSS:"`: the RSS now).
pub fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `(state, utime + stime in ticks)` from `/proc/PID/stat` (kept for a zombie until reaped).
pub fn stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name: state is 3rd, utime 14th, stime 15th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((state, utime + stime))
}

/// CPU time (user + system) of `ticks`.
pub fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND)
}

/// The user + system CPU time of `pid` so far (zero when it cannot be read).
pub fn cpu_of(pid: u32) -> Duration {
    ticks_to_duration(stat(pid).map_or(0, |(_, t)| t))
}

/// `/proc/loadavg`'s 1-minute load average.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
