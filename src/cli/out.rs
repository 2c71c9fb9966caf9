//! Writing command output to stdout without panicking when the reader goes away
//! (`code-intel impact X | head -1`): a closed pipe ends the command quietly with status
//! 0, as ripgrep does; any other write error is reported on stderr with status 2.
//! `println!` would panic ("failed printing to stdout") instead. Messages for stderr go
//! through [`warn`] (`errln!`), which ignores a closed stderr (`2>&1 | head -1`): there
//! is nowhere left to report it, and `eprintln!` would panic.

use std::io::Write as _;

/// Writes formatted text to stdout; see the module doc for errors.
pub(super) fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        fail(&e);
    }
}

/// Writes to `out` (a buffered stdout); errors as for [`write`].
pub(super) fn put(out: &mut impl std::io::Write, args: std::fmt::Arguments<'_>) {
    if let Err(e) = out.write_fmt(args) {
        fail(&e);
    }
}

/// Writes bytes to `out` (a buffered stdout); errors as for [`write`].
pub(super) fn put_bytes(out: &mut impl std::io::Write, bytes: &[u8]) {
    if let Err(e) = out.write_all(bytes) {
        fail(&e);
    }
}

/// Flushes `out` (a buffered stdout) at the end; errors as for [`write`].
pub(super) fn finish(mut out: impl std::io::Write) {
    if let Err(e) = out.flush() {
        fail(&e);
    }
}

/// Whether stderr is a terminal (a progress bar may redraw its line there).
pub(super) fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal()
}

/// Writes formatted text to stderr; a failed write is ignored (see the module doc).
pub(super) fn warn(args: std::fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.flush());
}

fn fail(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    warn(format_args!("error: cannot write the output: {e}\n"));
    std::process::exit(2);
}

/// `print!` that survives a closed stdout.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!($($arg)*))
    };
}

/// `println!` that survives a closed stdout.
macro_rules! outln {
    () => {
        $crate::cli::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `writeln!` to a buffered stdout that survives a closed stdout.
macro_rules! putln {
    ($out:expr, $($arg:tt)*) => {
        $crate::cli::out::put(&mut $out, format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that survives a closed stderr.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::cli::out::warn(format_args!($($arg)*))
    };
}

/// `eprintln!` that survives a closed stderr.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::out::warn(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(super) use {err, errln, out, outln, putln};
