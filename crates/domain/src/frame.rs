//! One stack frame, the one shape every reader of failure text produces:
//! the evidence parsers (`tracelab-evidence`), the code index's frame reader
//! and whatever compares or ranks frames.
//!
//! **Order.** A list of frames is ordered *innermost last*, as Python prints
//! a traceback (outermost call first, the frame that raised at the end),
//! whatever order the runtime printed them in: Java, JavaScript, Go and Rust
//! print the innermost frame first and their readers reverse it. Code that
//! wants the innermost frame takes the last one (`frames.iter().rev()`).

use serde::{Deserialize, Serialize};

/// One stack frame. In a list, innermost last (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The file: relative to the repository root when the reader could make
    /// it so, else as the evidence wrote it.
    pub file: Option<String>,
    /// The function name; the evidence parsers normalise it (generated parts
    /// such as lambda numbers, closure markers and symbol hashes removed).
    pub function: Option<String>,
    pub line: Option<u32>,
    /// Whether the frame is application code (not a library, runtime or vendored code).
    pub in_app: bool,
}
