//! Scale tools: synthetic extracts (`kanon generate`) and the plain-SQL
//! limit a run is compared with (`kanon limit`).

pub mod generate;
pub mod limit;
