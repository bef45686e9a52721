fn main() {
    kanon::started();
    kanon::one_malloc_arena();
    std::process::exit(kanon::cli::main());
}
