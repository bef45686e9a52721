// jemalloc for the whole process, DuckDB's C++ included (Cargo.toml).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: freed pages go back to the system
/// within a second (default 10 s, then 10 s more as MADV_FREE pages that
/// still count in RSS): `[engine] memory_limit` bounds the whole process.
#[cfg(target_os = "linux")]
#[export_name = "malloc_conf"]
static MALLOC_CONF: &[u8; 37] = b"dirty_decay_ms:1000,muzzy_decay_ms:0\0";

fn main() {
    kanon::started();
    std::process::exit(kanon::cli::main());
}
