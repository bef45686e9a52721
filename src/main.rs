fn main() {
    std::process::exit(kanon::cli::main());
}
