fn main() -> std::process::ExitCode {
    tracelab_verifier::main()
}
