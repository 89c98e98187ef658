fn main() -> std::process::ExitCode {
    tracelab_arbiter::main()
}
