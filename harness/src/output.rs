//! Lines for the user that survive the user going away. `println!` panics when stdout is a
//! closed pipe (`lockchaos scenario … | head -1`), and a panic in a reporter would end the run
//! before it heals its faults and removes its containers; these write and ignore the error.

/// `println!`, ignoring a closed stdout.
#[macro_export]
macro_rules! print_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!`, ignoring a closed stderr.
#[macro_export]
macro_rules! eprint_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
