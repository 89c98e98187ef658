//! Ports for processes a test starts. A server that runs in the test's own
//! process binds port 0 and reports its address (the services' `serve`
//! takes bound listeners); only a separate process — a service binary, a
//! nats-server restarted on the port it had — must be told its port before
//! it exists.
//!
//! Such ports come from below the kernel's ephemeral range: a port the
//! kernel handed out for `bind(0)` and we released is exactly the kind it
//! hands out next as the source port of some outgoing connection (CI lost a
//! run to that: "Address already in use" on a port picked a moment
//! earlier). Below the range only another test picking the same number can
//! collide; a per-process counter starting at an offset derived from the
//! process id keeps concurrent tests and concurrent test binaries apart.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// The ports handed out: below Linux's default ephemeral range
/// (32768–60999) and above the well-known and most registered services.
const FIRST: u32 = 20_000;
const LAST: u32 = 32_000;

static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// A loopback port nobody listens on right now, outside the ephemeral range.
pub fn free_port() -> u16 {
    let span = LAST - FIRST;
    // The first caller seeds the counter from the process id, so two test
    // binaries running at once start far apart.
    let _ = NEXT.compare_exchange(
        u32::MAX,
        (std::process::id().wrapping_mul(2_654_435_761)) % span,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..span {
        let port = FIRST + NEXT.fetch_add(1, Ordering::SeqCst) % span;
        if TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
    // Every port in the range is taken: fall back to the kernel's choice.
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for port in ports {
            assert!((FIRST..LAST).contains(&(port as u32)), "{port}");
            TcpListener::bind(("127.0.0.1", port)).expect("bindable");
        }
    }
}
