fn main() -> std::process::ExitCode {
    tracelab_ingest_service::main()
}
