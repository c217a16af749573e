//! Running a parser that may panic: the panic becomes an error message, and it is not printed.
//!
//! The PDF parsers panic on some malformed files. `catch_unwind` turns the panic into an
//! error, but the panic hook would still print `thread '…' panicked at …` to stderr, which
//! reads like a crash of mixseek. So the first call wraps the process's panic hook once: on a
//! thread inside [`catch_quietly`] the panic is logged at debug level instead; everywhere
//! else the previous hook runs unchanged.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static WRAP_HOOK: Once = Once::new();

/// Runs `f`; a panic inside it is returned as its message.
pub(crate) fn catch_quietly<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    WRAP_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                tracing::debug!(panic = %info, "parser panic caught");
            } else {
                previous(info);
            }
        }));
    });
    let was_quiet = QUIET.with(|q| q.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was_quiet));
    outcome.map_err(|panic| panic_message(panic.as_ref()))
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown error".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message() {
        assert_eq!(catch_quietly(|| 7), Ok(7));
        let e = catch_quietly(|| -> u8 { panic!("bad {}", "input") }).expect_err("panics");
        assert_eq!(e, "bad input");
        let e = catch_quietly(|| -> u8 { std::panic::panic_any(3u8) }).expect_err("panics");
        assert_eq!(e, "unknown error");
        // Outside, the flag is off again.
        assert!(!QUIET.with(Cell::get));
    }
}
