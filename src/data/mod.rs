//! The job's data as kanon's work tables: the hierarchies as dimension
//! tables, and the frequency sets built from the source with them.

pub mod frequency;
pub mod hierarchy;
pub(crate) mod population;
pub mod sample;
