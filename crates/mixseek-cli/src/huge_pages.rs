//! Transparent huge pages off for the process (Linux).
//!
//! mimalloc asks the kernel for huge pages on its memory (`madvise(MADV_HUGEPAGE)`), so on a
//! system whose THP mode is `madvise` (a common default) the first touch of each fresh 2 MB
//! region zeroes all of it, however little of it the process then uses. A run's memory is
//! many short-lived strings spread thinly over its heaps, so most of that zeroing is wasted
//! (measured in docs/benchmarks.md). With THP off, the kernel faults in 4 kB pages as they
//! are touched.
//!
//! `MIMALLOC_ALLOW_THP` set (to anything) leaves the choice to mimalloc, which reads it.

/// Turns transparent huge pages off for this process, unless `MIMALLOC_ALLOW_THP` is set.
/// Called first thing in `main`, before logging is set up: the error of a kernel without the
/// setting is returned for the log. Other systems are left as they are.
pub(crate) fn disable_unless_asked() -> Option<std::io::Error> {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return None;
    }
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        return Some(e.into());
    }
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_process_runs_without_transparent_huge_pages() {
        // (a developer who set the variable asked for mimalloc's choice)
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
            return;
        }
        assert!(super::disable_unless_asked().is_none());
        assert!(rustix::thread::transparent_huge_pages_are_disabled().expect("prctl"));
    }
}
