//! Standard output that outlives its reader.
//!
//! `autocoll list | head` closes the pipe after ten lines; `println!` then
//! panics. Output goes through [`say!`] instead: once standard output is
//! closed, further output is dropped and the command goes on to its end
//! (files it writes, `--json` and the like, are still written, and its exit
//! status still says how it went).

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` on standard output, dropping it once the reader is gone.
pub fn write(text: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        if e.kind() == ErrorKind::BrokenPipe {
            CLOSED.store(true, Ordering::Relaxed);
        } else {
            eprintln!("autocoll: writing to standard output: {e}");
        }
    }
}

/// `println!` that survives a closed standard output.
macro_rules! say {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use say;
