fn main() -> std::process::ExitCode {
    tracelab_indexer::main()
}
