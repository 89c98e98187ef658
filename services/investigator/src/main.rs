fn main() -> std::process::ExitCode {
    tracelab_investigator::main()
}
