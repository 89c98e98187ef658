fn main() -> std::process::ExitCode {
    tracelab_ingest::main()
}
