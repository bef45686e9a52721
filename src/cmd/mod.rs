//! One module per subcommand: its arguments (clap, the one usage text) and a
//! short `run` handing them to the library, where the work lives.
pub(crate) mod check;
pub(crate) mod generate;
pub(crate) mod hierarchy;
pub(crate) mod history;
pub(crate) mod init;
pub(crate) mod limit;
pub(crate) mod pareto;
pub(crate) mod run;
