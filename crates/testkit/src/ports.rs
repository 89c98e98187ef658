//! Ports for processes a test starts. A server that runs in the test's own
//! process binds port 0 and reports its address (the services' `serve`
//! takes bound listeners); only a separate process — a service binary, a
//! nats-server restarted on the port it had — must be told its port before
//! it exists.

/// A loopback port nobody listens on right now. Another process may take it
/// before the one it is meant for starts; the window is short, and the
/// process's failure to bind names the port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
