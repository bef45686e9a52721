//! Pure measures: information loss, the privacy models' verdicts, the
//! re-identification risk and the objectives of a front. No connection here.

pub mod dp;
pub mod limits;
pub mod metrics;
pub mod objectives;
pub(crate) mod privacy;
pub mod risk;
