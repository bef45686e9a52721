fn main() {
    kanon::started();
    std::process::exit(kanon::cli::main());
}
