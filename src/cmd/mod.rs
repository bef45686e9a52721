//! One module per subcommand, each opening with its usage.
pub mod check;
pub mod generate;
pub mod hierarchy;
pub mod limit;
pub mod pareto;
pub mod run;
