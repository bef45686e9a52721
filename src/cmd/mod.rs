//! One module per subcommand: its arguments (clap, the one usage text) and a
//! short `run` handing them to the library, where the work lives.
pub mod check;
pub mod generate;
pub mod hierarchy;
pub mod history;
pub mod init;
pub mod limit;
pub mod pareto;
pub mod run;
