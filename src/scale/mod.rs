//! Scale tools: synthetic extracts (`kanon generate`) and the plain-SQL
//! limit a run is compared with (`kanon limit`).

pub(crate) mod generate;
pub(crate) mod limit;
