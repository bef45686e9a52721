//! kanon's tests, one binary (DuckDB is linked once): a module per area, the
//! shared harness in `util`.

mod util;

mod adult;
mod cells;
mod check;
mod cli;
mod dp;
mod html;
mod init;
mod limits;
mod models;
mod nightly;
mod pbg;
mod persons;
mod postgres;
mod props;
mod release;
mod risk;
mod schemes;
mod search;
mod spark;
